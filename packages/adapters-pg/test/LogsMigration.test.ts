import { PgClient } from "@effect/sql-pg"
import { assert, layer } from "@effect/vitest"
import { layer as pgStores, migrations, PgDatabase } from "@hostplane/adapters-pg"
import * as Migrator from "@hostplane/adapters-pg/Migrator"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Kernel, Logs } from "@hostplane/core"
import { at, givenProject, minute } from "@hostplane/testkit/contract/Fixtures"
import { makeEvent } from "@hostplane/testkit/logs/LogStoreSuite"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

const grouping = "logs/0002_group_worker_log_events"

/** An event as the one-row-per-event table held it: the row's columns and the event's JSON text as written. */
interface OldRow {
  readonly projectId: Kernel.ProjectId
  readonly event: Logs.LogEvent
  readonly text: string
}

const ids = (events: ReadonlyArray<Logs.LogEvent>) => events.map((event) => event.id)

layer(TestDatabase.layerBare, { excludeTestServices: true })("migration logs/0002_group_worker_log_events", (it) => {
  it.effect(
    "moves every event of the one-row-per-event table over: pages, resumes, lookups and the purge find them as before",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase
        const client = PgClient.layer(PgDatabase.clientConfig(url, { schema: "hostplane", maxConnections: 2 }))
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe("CREATE SCHEMA hostplane")
          yield* Migrator.applyMigrations(migrations.filter((migration) => migration.id !== grouping))
          const busy = yield* givenProject
          const quiet = yield* givenProject
          // More of the busy project's events than one moved row holds, interleaved with the quiet one's, their own
          // times running backwards (recording order is not time order); one written with newlines between its
          // tokens and a logged object's keys out of order, as the `json` column kept its text.
          const old: Array<OldRow> = []
          for (let index = 0; index < 503; index++) {
            const event = makeEvent({
              timestamp: at((600 - index) * 1000),
              outcome: index % 7 === 0 ? "exception" : "ok",
              deploymentId: index % 2 === 0 ? "dep_even" : "dep_odd"
            })
            old.push({ projectId: busy.id, event, text: JSON.stringify(event) })
            if (index % 100 === 0) {
              const other = makeEvent({
                logs: [{ level: "log", message: [{ zeta: 1, alpha: "a\nb" }], timestamp: at(0) }]
              })
              old.push({ projectId: quiet.id, event: other, text: JSON.stringify(other, null, 2) })
            }
          }
          yield* sql`INSERT INTO worker_log_events (id, project_id, deployment_id, at, outcome, event)
            SELECT id, project_id, deployment_id, at, outcome, event::json
            FROM json_to_recordset(${JSON.stringify(
              old.map((row) => ({
                id: row.event.id,
                project_id: row.projectId,
                deployment_id: row.event.deploymentId,
                at: row.event.timestamp,
                outcome: row.event.outcome,
                event: row.text
              }))
            )}::json) AS old (id text, project_id text, deployment_id text, at timestamptz, outcome text, event text)`
          yield* Migrator.applyMigrations(migrations)

          const [gone] = yield* sql<{ readonly found: string | null }>`
            SELECT to_regclass('worker_log_events')::text AS found`
          assert.strictEqual(gone?.found, null)
          const logs = yield* Logs.LogStore
          const recorded = (projectId: Kernel.ProjectId) =>
            old.filter((row) => row.projectId === projectId).map((row) => row.event)
          const newest = (events: ReadonlyArray<Logs.LogEvent>) =>
            [...events].sort((a, b) =>
              a.timestamp !== b.timestamp ? (a.timestamp < b.timestamp ? 1 : -1) : a.id < b.id ? 1 : -1
            )
          const since = at(-60 * minute)
          assert.deepStrictEqual(yield* logs.list(busy.id, { limit: 1000, since }), newest(recorded(busy.id)))
          assert.deepStrictEqual(yield* logs.list(quiet.id, { limit: 1000, since }), newest(recorded(quiet.id)))
          const [moved] = yield* logs.list(quiet.id, { limit: 1, since })
          assert.deepStrictEqual(Object.keys(moved!.logs[0]!.message[0] as object), ["zeta", "alpha"])
          assert.deepStrictEqual(
            ids(yield* logs.list(busy.id, { limit: 5, since, outcome: "exception", deploymentId: "dep_odd" })),
            ids(
              newest(recorded(busy.id))
                .filter((event) => event.outcome === "exception" && event.deploymentId === "dep_odd")
                .slice(0, 5)
            )
          )
          const busyIds = recorded(busy.id).map((event) => Kernel.makeId("log", event.id))
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[0]!, 1000), ids),
            Option.some(busyIds.slice(1))
          )
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[498]!, 3), ids),
            Option.some(busyIds.slice(499, 502))
          )
          assert.deepStrictEqual(ids(yield* logs.byIds(busy.id, [busyIds[502]!, busyIds[7]!])), [
            busyIds[7],
            busyIds[502]
          ])

          // Recording goes on after the moved events, and the purge counts them with the new ones.
          const later = makeEvent({ timestamp: at(0) })
          yield* logs.insert([{ projectId: busy.id, event: later }])
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[502]!, 10), ids),
            Option.some([later.id])
          )
          yield* logs.purge({ since, keep: 500 })
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[4]!, 1000), ids),
            Option.some([...busyIds.slice(5), later.id])
          )
          assert.isTrue(Option.isNone(yield* logs.after(busy.id, busyIds[3]!, 1000)))
          assert.strictEqual((yield* logs.list(busy.id, { limit: 1000, since })).length, 500)
          assert.strictEqual((yield* logs.list(quiet.id, { limit: 1000, since })).length, 6)
        }).pipe(Effect.provide(pgStores.pipe(Layer.provideMerge(client))))
      })
  )
})
