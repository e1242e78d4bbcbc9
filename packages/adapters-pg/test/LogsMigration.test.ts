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
const splitting = "logs/0003_split_worker_log_events"

/** An event as the one-row-per-event table held it: the row's columns and the event's JSON text as written. */
interface OldRow {
  readonly projectId: Kernel.ProjectId
  readonly event: Logs.LogEvent
  readonly text: string
}

const ids = (events: ReadonlyArray<Logs.LogEvent>) => events.map((event) => event.id)

/** Events as the store lists them: newest first, ties by id. */
const newest = (events: ReadonlyArray<Logs.LogEvent>) =>
  [...events].sort((a, b) =>
    a.timestamp !== b.timestamp ? (a.timestamp < b.timestamp ? 1 : -1) : a.id < b.id ? 1 : -1
  )

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
          yield* Migrator.applyMigrations(
            migrations.filter((migration) => migration.id !== grouping && migration.id !== splitting)
          )
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

layer(TestDatabase.layerBare, { excludeTestServices: true })("migration logs/0003_split_worker_log_events", (it) => {
  it.effect(
    "rewrites every batch of events as per-event columns: pages, filters, resumes, lookups and the purge find them as before",
    () =>
      Effect.gen(function* () {
        const { url } = yield* TestDatabase
        const client = PgClient.layer(PgDatabase.clientConfig(url, { schema: "hostplane", maxConnections: 2 }))
        yield* Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe("CREATE SCHEMA hostplane")
          yield* Migrator.applyMigrations(migrations.filter((migration) => migration.id !== splitting))
          const busy = yield* givenProject
          const quiet = yield* givenProject
          // Batches as the one-text-per-batch store wrote them: a recorded batch's ids share its random id (its
          // `batch`), a moved row's do not; the events' own times out of recording order, both sides of the window.
          const batch = (size: number, key: string | null, event: (index: number) => Partial<Logs.LogEvent>) =>
            Array.from({ length: size }, (_, index) =>
              makeEvent({
                ...event(index),
                id: key === null ? `log_moved${index}x${size}` : `${key}${index.toString(36).padStart(4, "0")}`
              })
            )
          const rows: Array<{ projectId: Kernel.ProjectId; key: string | null; events: Array<Logs.LogEvent> }> = [
            {
              projectId: busy.id,
              key: null,
              events: batch(300, null, (index) => ({
                timestamp: at((index % 2 === 0 ? -90 : 10) * minute + index * 1000),
                outcome: index % 30 === 0 ? "exception" : "ok",
                deploymentId: index % 3 === 0 ? "dep_three" : "dep_other"
              }))
            },
            {
              projectId: quiet.id,
              key: "log_quietbatch",
              events: batch(2, "log_quietbatch", (index) => ({
                response: null,
                outcome: "canceled",
                logs: [{ level: "warn", message: [{ zeta: 1, alpha: "a\nb" }, 'say "hi"'], timestamp: at(index) }],
                exceptions: [{ name: "TypeError", message: "boom", stack: "TypeError: boom\n    at fetch" }],
                truncated: true
              }))
            },
            {
              projectId: busy.id,
              key: "log_busybatch",
              events: batch(250, "log_busybatch", (index) => ({
                timestamp: at((250 - index) * 1000),
                outcome: index % 25 === 0 ? "timeout" : "ok",
                deploymentId: "dep_three",
                response: index % 25 === 0 ? null : { status: 200 + (index % 3) },
                durationMs: index
              }))
            }
          ]
          for (const row of rows) {
            const times = row.events.map((event) => event.timestamp).sort()
            yield* sql`INSERT INTO worker_log_batches (project_id, first_at, last_at, count, batch, ids, deployments,
                outcomes, events)
              VALUES (${row.projectId}, ${times[0]!}::timestamptz, ${times.at(-1)!}::timestamptz, ${row.events.length},
                ${row.key}, ${ids(row.events)}::text[], ${[...new Set(row.events.map((event) => event.deploymentId))]}::text[],
                ${[...new Set(row.events.map((event) => event.outcome))]}::text[],
                ${row.events.map((event) => JSON.stringify(event)).join("\n")})`
          }
          yield* Migrator.applyMigrations(migrations)

          const [gone] = yield* sql<{ readonly found: string | null }>`
            SELECT column_name AS found FROM information_schema.columns
            WHERE table_name = 'worker_log_batches' AND column_name = 'events'`
          assert.isUndefined(gone)
          const logs = yield* Logs.LogStore
          const recorded = (projectId: Kernel.ProjectId) =>
            rows.filter((row) => row.projectId === projectId).flatMap((row) => row.events)
          const since = at(-120 * minute)
          assert.deepStrictEqual(yield* logs.list(busy.id, { limit: 1000, since }), newest(recorded(busy.id)))
          assert.deepStrictEqual(yield* logs.list(quiet.id, { limit: 1000, since }), newest(recorded(quiet.id)))
          const [kept] = yield* logs.list(quiet.id, { limit: 1, since })
          assert.deepStrictEqual(Object.keys(kept!.logs[0]!.message[0] as object), ["zeta", "alpha"])
          // A page at a time, and filtered, as before the rewrite.
          const pages: Array<Logs.LogEvent> = []
          let before: Logs.LogListQuery["before"]
          for (;;) {
            const page = yield* logs.list(busy.id, { limit: 51, since, before })
            pages.push(...page)
            const last = page.at(-1)
            if (page.length < 51 || last === undefined) break
            before = { createdAt: last.timestamp, id: last.id }
          }
          assert.deepStrictEqual(ids(pages), ids(newest(recorded(busy.id))))
          for (const filter of [
            { outcome: "exception" as const },
            { outcome: "timeout" as const, deploymentId: "dep_three" },
            { deploymentId: "dep_other" }
          ]) {
            assert.deepStrictEqual(
              ids(yield* logs.list(busy.id, { limit: 7, since, ...filter })),
              ids(
                newest(recorded(busy.id))
                  .filter(
                    (event) =>
                      (filter.outcome === undefined || event.outcome === filter.outcome) &&
                      (filter.deploymentId === undefined || event.deploymentId === filter.deploymentId)
                  )
                  .slice(0, 7)
              )
            )
          }
          const busyIds = recorded(busy.id).map((event) => Kernel.makeId("log", event.id))
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[0]!, 1000), ids),
            Option.some(busyIds.slice(1))
          )
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[298]!, 4), ids),
            Option.some(busyIds.slice(299, 303))
          )
          assert.deepStrictEqual(ids(yield* logs.byIds(busy.id, [busyIds[549]!, busyIds[7]!, busyIds[300]!])), [
            busyIds[7],
            busyIds[300],
            busyIds[549]
          ])

          // Recording goes on after the rewritten events; the purge cuts the moved row at the window and keeps the
          // project's newest 500 in recording order.
          const later = makeEvent({ timestamp: at(0) })
          yield* logs.insert([{ projectId: busy.id, event: later }])
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, busyIds[549]!, 10), ids),
            Option.some([later.id])
          )
          const window = at(-60 * minute)
          yield* logs.purge({ since: window, keep: 500 })
          const left = [...recorded(busy.id), later].filter((event) => event.timestamp >= window).slice(-500)
          assert.deepStrictEqual(yield* logs.list(busy.id, { limit: 1000, since: at(-120 * minute) }), newest(left))
          assert.deepStrictEqual(
            Option.map(yield* logs.after(busy.id, Kernel.makeId("log", left[0]!.id), 1000), ids),
            Option.some(ids(left.slice(1)))
          )
        }).pipe(Effect.provide(pgStores.pipe(Layer.provideMerge(client))))
      })
  )
})
