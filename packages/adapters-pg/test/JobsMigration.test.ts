import { PgClient, PgMigrator } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { legacyMigrations, PgDatabase } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/** Every migration before the jobs engine's. */
const before = Object.fromEntries(Object.entries(legacyMigrations).filter(([id]) => id < "0009"))

/** A fresh database next to the test database, dropped when the scope closes. */
const freshDatabase = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { url } = yield* TestDatabase
  const name = `hp_legacy_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`
  yield* Effect.acquireRelease(sql`CREATE DATABASE ${sql(name)}`, () =>
    sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`.pipe(Effect.ignore)
  )
  const database = new URL(Redacted.value(url))
  database.pathname = `/${name}`
  return Redacted.make(database.href)
})

layer(TestDatabase.layer, { excludeTestServices: true })("migration 0009_create_jobs", (it) => {
  it.effect(
    "moves operations (project.delete spelled project_delete), queued mail and pending hostnames into jobs, keeping each area's own rows",
    () =>
      Effect.gen(function* () {
        const url = yield* freshDatabase
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          // As that version did, but inside hostplane's schema (the client's search_path), as a later start would see it.
          yield* sql`CREATE SCHEMA hostplane`
          yield* PgMigrator.make({})({ loader: PgMigrator.fromRecord(before) })
          const t = "2030-01-01T00:00:00.000Z"
          const later = "2030-01-01T00:05:00.000Z"
          yield* sql`INSERT INTO orgs (id, slug, name, plan, personal, created_at)
            VALUES ('org_1', 'team', 'Team', 'free', false, ${t})`
          yield* sql`INSERT INTO projects (id, org_id, name, hostname, created_at, deleting_since)
            VALUES ('prj_1', 'org_1', 'web', 'web.apps.localhost', ${t}, ${t})`
          yield* sql`INSERT INTO operations (id, kind, org_id, project_id, phase, terminal_code, created_at, updated_at,
            attempts, next_run_at, last_error)
            VALUES ('op_1', 'project.delete', 'org_1', 'prj_1', 'data', NULL, ${t}, ${later}, 2, ${later}, 'boom'),
              ('op_0', 'project.delete', 'org_1', 'prj_0', 'metadata', 'done', ${t}, ${t}, 1, ${t}, NULL)`
          yield* sql`INSERT INTO mail_outbox (id, from_address, to_address, subject, body, state, attempts,
            next_attempt_at, last_error, sent_at, created_at)
            VALUES ('mail_q', 'a@x', 'b@x', 's', 'b', 'queued', 1, ${later}, '421', NULL, ${t}),
              ('mail_s', 'a@x', 'b@x', 's', 'b', 'sent', 1, ${t}, NULL, ${t}, ${t})`
          yield* sql`INSERT INTO hostnames (name, project_id, org_id, kind, status, verify_token, last_error, created_at,
            verified_at, next_check_at)
            VALUES ('www.example.com', 'prj_1', 'org_1', 'custom', 'pending_dns', 'tok', 'NXDOMAIN', ${t}, NULL, ${later}),
              ('ok.example.com', 'prj_1', 'org_1', 'custom', 'active', 'tok2', NULL, ${t}, ${t}, ${t})`

          yield* PgDatabase.migrate
          const jobs = yield* sql<{
            readonly id: string
            readonly kind: string
            readonly key: string | null
            readonly payload: unknown
            readonly phase: string
            readonly terminalCode: string | null
            readonly attempts: number
            readonly runAt: Date
            readonly lastError: string | null
          }>`SELECT id, kind, key, payload, phase, terminal_code, attempts, run_at, last_error FROM jobs ORDER BY kind, id`
          assert.deepStrictEqual(
            jobs.map((job) => ({
              ...job,
              id: job.kind === "hostname_check" ? "" : job.id,
              runAt: job.runAt.toISOString()
            })),
            [
              {
                id: "",
                kind: "hostname_check",
                key: null,
                payload: { name: "www.example.com", verifyToken: "tok" },
                phase: "check",
                terminalCode: null,
                attempts: 0,
                runAt: later,
                lastError: null
              },
              {
                id: "mail_q",
                kind: "mail_send",
                key: null,
                payload: { mailId: "mail_q" },
                phase: "send",
                terminalCode: null,
                attempts: 1,
                runAt: later,
                lastError: "421"
              },
              {
                id: "op_0",
                kind: "project_delete",
                key: "prj_0",
                payload: { orgId: "org_1", projectId: "prj_0" },
                phase: "metadata",
                terminalCode: "done",
                attempts: 1,
                runAt: t,
                lastError: null
              },
              {
                id: "op_1",
                kind: "project_delete",
                key: "prj_1",
                payload: { orgId: "org_1", projectId: "prj_1" },
                phase: "data",
                terminalCode: null,
                attempts: 2,
                runAt: later,
                lastError: "boom"
              }
            ]
          )
          const mail = yield* sql`SELECT id, state, last_error, sent_at FROM mail_outbox ORDER BY id`
          assert.deepStrictEqual(
            mail.map((row) => [row.id, row.state, row.lastError]),
            [
              ["mail_q", "queued", "421"],
              ["mail_s", "sent", null]
            ]
          )
          const hostnames = yield* sql`SELECT name, status, last_error FROM hostnames ORDER BY name`
          assert.deepStrictEqual(
            hostnames.map((row) => [row.name, row.status, row.lastError]),
            [
              ["ok.example.com", "active", null],
              ["www.example.com", "pending_dns", "NXDOMAIN"]
            ]
          )
          const operations = yield* sql`SELECT to_regclass('operations') AS present`
          assert.isNull(operations[0]?.present, "the operations table is gone")
        }).pipe(Effect.provide(PgClient.layer(PgDatabase.clientConfig(url, { maxConnections: 1 }))))
      })
  )
})
