import { Database, Kernel } from "@hostplane/core"
import { Duration, Effect, Layer, Option, Schema, Scope } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"
import { unsharedClient } from "../UnsharedClient.ts"

const DatabaseRowSchema = Schema.Struct({
  projectId: Kernel.ProjectId,
  keyId: Schema.String,
  ciphertext: Schema.String,
  epoch: Schema.Number,
  operationId: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  home: Schema.NullOr(Schema.String),
  endpoint: Schema.NullOr(Database.HomeEndpoint)
})

const TokenRowSchema = Schema.Struct({
  projectId: Kernel.ProjectId,
  user: Schema.String,
  verifier: Schema.String,
  createdAt: Timestamp
})

const GenerationRowSchema = Schema.Struct({
  projectId: Kernel.ProjectId,
  epoch: Schema.Number,
  seq: Schema.Number,
  bytes: Schema.NumberFromString,
  sha256: Schema.String,
  offsiteKey: Schema.String,
  createdAt: Timestamp,
  lastCheckedAt: NullableTimestamp,
  checkFailedAt: NullableTimestamp
})

const toRow = (row: typeof DatabaseRowSchema.Type): Database.DatabaseRow => ({
  projectId: row.projectId,
  sealedPassword: { keyId: row.keyId, ciphertext: row.ciphertext },
  epoch: row.epoch,
  operationId: row.operationId,
  createdAt: row.createdAt,
  home: row.home,
  endpoint: row.endpoint
})

/** The first key of the generation locks (`pg_advisory_lock(int4, int4)`, the project's `hashtext` second): "hgen". */
const generationLockSpace = 0x6867656e

/**
 * `DatabaseStore` on PostgreSQL (migration `database/0001_create_databases`). `exclusive` holds a session advisory lock on an
 * unshared connection for as long as its effect runs: several replicas take one generation of a project at a time,
 * and a process that dies ends its session and so gives the project back. The lock is tried, not waited for in the
 * server, so a holder interrupted while waiting leaves no lock request behind on a connection going back to its pool,
 * and a granted lock's unlock is registered in the same uninterruptible step as the try that got it.
 */
export const layer = Layer.effect(
  Database.DatabaseStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: DatabaseRowSchema,
      execute: (projectId) =>
        sql`SELECT project_id, key_id, ciphertext, epoch, operation_id, created_at, home, endpoint FROM databases
            WHERE project_id = ${projectId}`
    })
    const tokens = SqlSchema.findAll({
      Request: Schema.String,
      Result: TokenRowSchema,
      execute: (projectId) =>
        sql`SELECT project_id, "user", verifier, created_at FROM database_tokens WHERE project_id = ${projectId}
            ORDER BY created_at, "user"`
    })
    const generations = SqlSchema.findAll({
      Request: Schema.String,
      Result: GenerationRowSchema,
      execute: (projectId) =>
        sql`SELECT project_id, epoch, seq, bytes::text AS bytes, sha256, offsite_key, created_at, last_checked_at,
              check_failed_at
            FROM database_generations WHERE project_id = ${projectId} ORDER BY epoch DESC, seq DESC`
    })

    const sessions = yield* unsharedClient(4)
    const locked = (projectId: string) =>
      Effect.gen(function* () {
        const connection = yield* sessions.reserve
        const args = [generationLockSpace, projectId]
        // One try and the unlock that goes with its success are one uninterruptible step: a holder interrupted while
        // the statement ran would otherwise leave the lock granted on a connection going back to its pool, and every
        // other session would wait for the project until the pool closed that connection (a minute idle). The unlock
        // runs before the connection goes back to the pool (finalizers run last added first).
        const attempt = Effect.uninterruptible(
          Effect.gen(function* () {
            const [row] = yield* connection.executeValues("SELECT pg_try_advisory_lock($1, hashtext($2))", args)
            if (row?.[0] !== true) return false
            yield* Effect.addFinalizer(() =>
              connection.executeRaw("SELECT pg_advisory_unlock($1, hashtext($2))", args).pipe(Effect.ignore)
            )
            return true
          })
        )
        while (!(yield* attempt)) yield* Effect.sleep(Duration.millis(100))
      }).pipe(Effect.orDie)
    const exclusive = <A, E, R>(projectId: string, effect: Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(
        Scope.make(),
        (scope) => Effect.andThen(Scope.provide(locked(projectId), scope), effect),
        (scope, exit) => Scope.close(scope, exit)
      )

    return Database.DatabaseStore.of({
      exclusive,
      find: (projectId) => find(projectId).pipe(Effect.map(Option.map(toRow)), Effect.orDie),
      create: (projectId, sealed, at, home) =>
        Effect.gen(function* () {
          yield* sql`INSERT INTO databases (project_id, key_id, ciphertext, created_at, home)
                     VALUES (${projectId}, ${sealed.keyId}, ${sealed.ciphertext}, ${at}::timestamptz, ${home})
                     ON CONFLICT (project_id) DO NOTHING`
          return toRow(Option.getOrThrow(yield* find(projectId)))
        }).pipe(Effect.orDie),
      place: (projectId, home, endpoint) =>
        sql`UPDATE databases SET home = ${home}, endpoint = ${endpoint === null ? null : JSON.stringify(endpoint)}::jsonb
            WHERE project_id = ${projectId} AND (home IS NULL OR home = ${home}) RETURNING project_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      move: (projectId, from, to, operationId) =>
        sql`UPDATE databases SET home = ${to}, endpoint = NULL, operation_id = ${operationId}
            WHERE project_id = ${projectId} AND home = ${from} AND operation_id IS NULL RETURNING project_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      remove: (projectId) =>
        sql`DELETE FROM databases WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie),
      setEpoch: (projectId, epoch) =>
        sql`UPDATE databases SET epoch = ${epoch} WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie),
      holdFor: (projectId, operationId) =>
        (operationId === null
          ? sql`UPDATE databases SET operation_id = NULL WHERE project_id = ${projectId} RETURNING project_id`
          : sql`UPDATE databases SET operation_id = ${operationId}
                WHERE project_id = ${projectId} AND operation_id IS NULL RETURNING project_id`
        ).pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      projects: sql<{ readonly projectId: string }>`SELECT project_id FROM databases ORDER BY project_id`.pipe(
        Effect.map((rows) => rows.map((row) => Kernel.makeId("prj", row.projectId))),
        Effect.orDie
      ),
      tokens: (projectId) => tokens(projectId).pipe(Effect.orDie),
      addToken: (token) =>
        sql`INSERT INTO database_tokens (project_id, "user", verifier, created_at)
            VALUES (${token.projectId}, ${token.user}, ${token.verifier}, ${token.createdAt}::timestamptz)`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      removeToken: (projectId, user) =>
        sql`DELETE FROM database_tokens WHERE project_id = ${projectId} AND "user" = ${user} RETURNING "user"`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      generations: (projectId) => generations(projectId).pipe(Effect.orDie),
      addGeneration: (g) =>
        sql`INSERT INTO database_generations (project_id, epoch, seq, bytes, sha256, offsite_key, created_at)
            VALUES (${g.projectId}, ${g.epoch}, ${g.seq}, ${g.bytes}, ${g.sha256}, ${g.offsiteKey},
              ${g.createdAt}::timestamptz)`.pipe(Effect.asVoid, Effect.orDie),
      checked: (projectId, epoch, seq, at, ok) =>
        (ok
          ? sql`UPDATE database_generations SET last_checked_at = ${at}::timestamptz
                WHERE project_id = ${projectId} AND epoch = ${epoch} AND seq = ${seq}`
          : sql`UPDATE database_generations SET check_failed_at = ${at}::timestamptz
                WHERE project_id = ${projectId} AND epoch = ${epoch} AND seq = ${seq}`
        ).pipe(Effect.asVoid, Effect.orDie),
      removeGenerations: (projectId) =>
        sql`DELETE FROM database_generations WHERE project_id = ${projectId}`.pipe(Effect.asVoid, Effect.orDie)
    })
  })
)
