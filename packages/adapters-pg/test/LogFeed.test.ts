import { assert, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { layer as pgStores } from "@hostplane/adapters-pg"
import { channel } from "@hostplane/adapters-pg/logs/LogStorePg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Kernel, Logs } from "@hostplane/core"
import { givenProject } from "@hostplane/testkit/contract/Fixtures"
import { Deferred, Effect, Fiber, Layer, Queue } from "effect"
import { makeEvent } from "@hostplane/testkit/logs/LogStoreSuite"

/** An event of `projectId` recorded now. */
const row = (projectId: Kernel.ProjectId): Logs.LogEventRow => ({
  projectId,
  event: makeEvent({ timestamp: new Date().toISOString() })
})

/** Every note a feed gives until `last` is among them, of `projectId` only. */
const heardUntil = (feed: Logs.LogFeed, projectId: Kernel.ProjectId, last: string) =>
  Effect.gen(function* () {
    const heard: Array<string> = []
    while (!heard.includes(last)) {
      heard.push(...(yield* feed.next).filter((note) => note.projectId === projectId).map((note) => note.id))
    }
    return heard
  })

// A notification reaches the listener some time after its insert committed: a stream opened in between must not send
// that event (it was recorded before the stream opened), and must send every event committed after it opened.
layer(pgStores.pipe(Layer.provideMerge(TestDatabase.layer)))("PostgreSQL's runtime log feed", (it) => {
  it.effect("a feed never announces an event committed before it opened, even when the notification comes later", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const sql = yield* PgClient.PgClient
        const project = yield* givenProject
        // The notification of the first insert, exactly as PostgreSQL delivered it.
        const notifications = yield* sql.listen(channel)
        const before = row(project.id)
        yield* logs.insert([before])
        let payload = ""
        while (!payload.startsWith(`${project.id} `)) payload = (yield* Queue.take(notifications)).payload
        const feed = yield* logs.watch
        // That notification arrives only now, after the feed opened (a busy listener, a slow network).
        yield* sql`SELECT pg_notify(${channel}, ${payload})`
        const after = row(project.id)
        yield* logs.insert([after])
        assert.deepStrictEqual(yield* heardUntil(feed, project.id, after.event.id), [after.event.id])
      })
    )
  )

  it.effect("an insert that took its place before the feed opened but committed after it is announced", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const sql = yield* PgClient.PgClient
        const project = yield* givenProject
        const slow = row(project.id)
        const inserted = yield* Deferred.make<void>()
        const commit = yield* Deferred.make<void>()
        // Its sequence number is taken now; its commit waits.
        const transaction = yield* Effect.forkScoped(
          sql.withTransaction(
            Effect.andThen(
              Effect.andThen(logs.insert([slow]), Deferred.succeed(inserted, undefined)),
              Deferred.await(commit)
            )
          )
        )
        yield* Deferred.await(inserted)
        const quick = row(project.id)
        yield* logs.insert([quick])
        const feed = yield* logs.watch
        yield* Deferred.succeed(commit, undefined)
        yield* Fiber.join(transaction)
        // The quick one committed before the feed opened; the slow one, with the lower sequence number, after.
        assert.deepStrictEqual(yield* heardUntil(feed, project.id, slow.event.id), [slow.event.id])
      })
    )
  )
})
