import { PgClient } from "@effect/sql-pg"
import { Database, EndUser } from "@hostplane/core"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope, Semaphore } from "effect"
import { SqlClient } from "effect/sql"

interface Row {
  readonly id: string
  readonly provider: string
  readonly subject: string
  readonly email: string | null
  readonly name: string | null
  readonly created_at: Date | string
}

const toUser = (row: Row): EndUser.EndUser => ({
  id: row.id,
  provider: row.provider,
  subject: row.subject,
  email: row.email,
  name: row.name,
  createdAt: new Date(row.created_at).toISOString()
})

const failed = (message: string) => (cause: unknown) =>
  new EndUser.EndUserDirectoryError({
    message: `${message}: ${cause instanceof Error ? cause.message : String(cause)}`
  })

/**
 * `EndUserDirectory` on each project's own PostgreSQL database: one small pool per database (opened at first use,
 * closed with the layer), connected as the project role, which owns the database. The `service_auth` schema is made
 * on first use under an advisory lock, so two replicas starting at once do not race (removing identities alone does
 * not make it).
 */
export const layer: Layer.Layer<EndUser.EndUserDirectory, never, Database.DatabaseNode> = Layer.effect(
  EndUser.EndUserDirectory,
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const pools = new Map<string, SqlClient.SqlClient>()
    const lock = Semaphore.makeUnsafe(1)
    // The node's authority (when this process runs the node admin; `DatabaseNode.off` has none) verifies the
    // cluster's certificate and host; without it `require` means what it means to libpq: encrypted, not verified.
    const authority = Option.fromUndefinedOr((yield* Database.DatabaseNode).authority)
    const tlsOf = (db: Database.DatabaseConnect) =>
      db.sslmode === "disable"
        ? false
        : Option.match(authority, {
            onNone: () => ({ rejectUnauthorized: false }),
            onSome: (ca) => ({ ca })
          })

    const prepare = (sql: SqlClient.SqlClient) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT pg_advisory_xact_lock(hashtext('service_auth'))`
          yield* sql`CREATE SCHEMA IF NOT EXISTS service_auth`
          yield* sql`
            CREATE TABLE IF NOT EXISTS service_auth.users (
              id text PRIMARY KEY DEFAULT 'eu_' || replace(gen_random_uuid()::text, '-', ''),
              email text,
              name text,
              created_at timestamptz NOT NULL,
              last_sign_in_at timestamptz NOT NULL
            )`
          yield* sql`
            CREATE TABLE IF NOT EXISTS service_auth.identities (
              provider text NOT NULL,
              subject text NOT NULL,
              user_id text NOT NULL REFERENCES service_auth.users (id) ON DELETE CASCADE,
              PRIMARY KEY (provider, subject)
            )`
          // When the identity was made, so a provider delete removes only the ones made before it. A schema made
          // before this column gets it here; its identities count as older than any delete.
          yield* sql`
            ALTER TABLE service_auth.identities
            ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT '-infinity'`
          yield* sql`
            CREATE TABLE IF NOT EXISTS service_auth.sessions (
              token_hash text PRIMARY KEY,
              user_id text NOT NULL REFERENCES service_auth.users (id) ON DELETE CASCADE,
              provider text NOT NULL,
              subject text NOT NULL,
              created_at timestamptz NOT NULL,
              expires_at timestamptz NOT NULL
            )`
          yield* sql`CREATE INDEX IF NOT EXISTS sessions_expires_at ON service_auth.sessions (expires_at)`
        })
      )

    const prepared = new Set<string>()

    /** The pool of a project's database (its `service_auth` schema made ready first unless `schema` is false). */
    const poolOf = (db: Database.DatabaseConnect, schema = true) =>
      lock.withPermit(
        Effect.gen(function* () {
          const existing = pools.get(db.url)
          if (existing !== undefined) {
            if (!schema || prepared.has(db.url)) return existing
            yield* prepare(existing).pipe(Effect.mapError(failed("cannot prepare the service_auth schema")))
            prepared.add(db.url)
            return existing
          }
          const own = yield* Scope.fork(scope)
          const context = yield* Layer.buildWithScope(
            PgClient.layer({
              url: Redacted.make(db.url),
              ssl: tlsOf(db),
              maxConnections: 3,
              idleTimeout: "30 seconds",
              connectTimeout: "5 seconds"
            }),
            own
          ).pipe(Effect.mapError(failed("cannot connect to the project's database")))
          const sql = Context.get(context, SqlClient.SqlClient)
          if (schema) {
            const ready = yield* Effect.exit(prepare(sql))
            if (Exit.isFailure(ready)) {
              yield* Scope.close(own, Exit.void)
              return yield* Effect.fail(failed("cannot prepare the service_auth schema")(ready.cause))
            }
            prepared.add(db.url)
          }
          pools.set(db.url, sql)
          return sql
        })
      )

    const withSql = <A>(
      db: Database.DatabaseConnect,
      message: string,
      use: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>,
      schema = true
    ) =>
      Effect.flatMap(poolOf(db, schema), (sql) => use(sql).pipe(Effect.mapError(failed(message)))).pipe(
        Effect.withSpan("EndUserDirectoryPg.query")
      )

    return EndUser.EndUserDirectory.of({
      signIn: (db, identity, session) =>
        withSql(db, "sign-in failed", (sql) =>
          sql.withTransaction(
            Effect.gen(function* () {
              // Expired sessions go as new ones come, so the table stays the size of the live ones.
              yield* sql`DELETE FROM service_auth.sessions WHERE expires_at < ${session.now}::timestamptz`
              const known = yield* sql<{ user_id: string }>`
                SELECT user_id FROM service_auth.identities
                WHERE provider = ${identity.provider} AND subject = ${identity.subject}`
              let userId = known[0]?.user_id
              if (userId === undefined) {
                if (!session.allowSignups) return Option.none<EndUser.EndUser>()
                const created = yield* sql<{ id: string }>`
                  INSERT INTO service_auth.users (email, name, created_at, last_sign_in_at)
                  VALUES (${identity.email}, ${identity.name}, ${session.now}::timestamptz, ${session.now}::timestamptz)
                  RETURNING id`
                userId = created[0]!.id
                yield* sql`
                  INSERT INTO service_auth.identities (provider, subject, user_id, created_at)
                  VALUES (${identity.provider}, ${identity.subject}, ${userId}, ${session.now}::timestamptz)`
              } else {
                yield* sql`
                  UPDATE service_auth.users
                  SET email = COALESCE(${identity.email}, email), name = COALESCE(${identity.name}, name),
                      last_sign_in_at = ${session.now}::timestamptz
                  WHERE id = ${userId}`
              }
              yield* sql`
                INSERT INTO service_auth.sessions (token_hash, user_id, provider, subject, created_at, expires_at)
                VALUES (${session.tokenHash}, ${userId}, ${identity.provider}, ${identity.subject},
                        ${session.now}::timestamptz, ${session.expiresAt}::timestamptz)`
              const rows = yield* sql<Row>`
                SELECT id, ${identity.provider} AS provider, ${identity.subject} AS subject, email, name, created_at
                FROM service_auth.users WHERE id = ${userId}`
              return Option.some(toUser(rows[0]!))
            })
          )
        ),
      session: (db, tokenHash, now) =>
        withSql(db, "cannot read the session", (sql) =>
          Effect.map(
            sql<Row>`
              SELECT u.id, s.provider, s.subject, u.email, u.name, u.created_at
              FROM service_auth.sessions s JOIN service_auth.users u ON u.id = s.user_id
              WHERE s.token_hash = ${tokenHash} AND s.expires_at > ${now}::timestamptz`,
            (rows) => Option.map(Option.fromNullishOr(rows[0]), toUser)
          )
        ),
      signOut: (db, tokenHash) =>
        withSql(db, "cannot end the session", (sql) =>
          Effect.asVoid(sql`DELETE FROM service_auth.sessions WHERE token_hash = ${tokenHash}`)
        ),
      removeIdentities: (db, provider, before) =>
        Effect.gen(function* () {
          // Never makes the schema where no one signed in: only a database that has the table has identities.
          const found = yield* withSql(
            db,
            "cannot read the service_auth schema",
            (sql) => sql<{ present: boolean }>`SELECT to_regclass('service_auth.identities') IS NOT NULL AS present`,
            false
          )
          if (found[0]?.present !== true) return 0
          return yield* withSql(db, "cannot remove the identities", (sql) =>
            Effect.map(
              sql`
                DELETE FROM service_auth.identities
                WHERE provider = ${provider} AND created_at <= ${before}::timestamptz
                RETURNING user_id`,
              (rows) => rows.length
            )
          )
        })
    })
  })
)
