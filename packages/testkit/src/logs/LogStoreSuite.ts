import { assert, layer } from "@effect/vitest"
import { Kernel, Logs, type Orgs, Projects } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { at, givenProject, minute, uniqueId } from "../contract/Fixtures.ts"

/** What the runtime log contract needs: events belong to projects. */
export type LogStoreSuiteServices = Logs.LogStore | Orgs.OrgStore | Projects.ProjectStore

/** An event of the contract's shape, with a fresh id; `overrides` replace its fields. */
export const makeEvent = (
  overrides: Partial<Logs.LogEvent> = {}
): Logs.LogEvent & { readonly id: Kernel.LogEventId } => ({
  deploymentId: "dep_a",
  timestamp: at(0),
  outcome: "ok",
  request: { method: "GET", url: "https://example.test/" },
  response: { status: 200 },
  durationMs: 3,
  logs: [],
  exceptions: [],
  truncated: false,
  ...overrides,
  id: Kernel.makeId("log", overrides.id ?? uniqueId("log"))
})

const row = (projectId: Kernel.ProjectId, overrides: Partial<Logs.LogEvent> = {}): Logs.LogEventRow => ({
  projectId,
  event: makeEvent(overrides)
})

const ids = (events: ReadonlyArray<Logs.LogEvent>) => events.map((event) => event.id)

/** The `LogStore` contract: every adapter must pass it; projects are unique per test. */
export const logStoreSuite = <E>(name: string, store: Layer.Layer<LogStoreSuiteServices, E>): void =>
  layer(store)(`${name}: LogStore contract`, (it) => {
    it.effect("an event comes back exactly as recorded, a logged object's keys in their order", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const project = yield* givenProject
        const event = row(project.id, {
          outcome: "exception",
          response: null,
          logs: [
            { level: "warn", message: ["text", 1, null, { user_id: 7, Zeta: [true], alpha: "ü" }], timestamp: at(1) },
            // What a store's quoting must keep: quotes, backslashes, braces, commas, a NUL escape, a newline.
            { level: "log", message: ['say "hi", {a,b} \\ \\" \u0000 \n', { 'k"}': "{\\}" }], timestamp: at(2) }
          ],
          exceptions: [{ name: "TypeError", message: "boom", stack: "TypeError: boom\n    at fetch" }],
          truncated: true
        })
        assert.strictEqual(yield* logs.insert([event]), 1)
        const [listed] = yield* logs.list(project.id, { limit: 10, since: at(-minute) })
        assert.deepStrictEqual(listed, event.event)
        assert.deepStrictEqual(Object.keys(listed!.logs[0]!.message[3] as object), ["user_id", "Zeta", "alpha"])
      })
    )

    it.effect("pages are newest first by (timestamp, id), after a position, within the window and filters", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const project = yield* givenProject
        const other = yield* givenProject
        const rows = [
          row(project.id, { id: "log_b", timestamp: at(2 * minute) }),
          row(project.id, { id: "log_a", timestamp: at(2 * minute), deploymentId: "dep_b" }),
          row(project.id, { id: "log_c", timestamp: at(3 * minute), outcome: "timeout", response: null }),
          row(project.id, { id: "log_old", timestamp: at(-10 * minute) }),
          row(other.id, { timestamp: at(5 * minute) })
        ]
        yield* logs.insert(
          rows.map((r) => ({ ...r, event: { ...r.event, id: Kernel.makeId("log", `${r.event.id}_${project.id}`) } }))
        )
        const suffix = `_${project.id}`
        const page = (query: Partial<Logs.LogListQuery>) =>
          Effect.map(logs.list(project.id, { limit: 10, since: at(0), ...query }), (events) =>
            ids(events).map((id) => id.replace(suffix, ""))
          )
        assert.deepStrictEqual(yield* page({}), ["log_c", "log_b", "log_a"])
        assert.deepStrictEqual(yield* page({ limit: 2 }), ["log_c", "log_b"])
        assert.deepStrictEqual(yield* page({ before: { createdAt: at(2 * minute), id: `log_b${suffix}` } }), ["log_a"])
        assert.deepStrictEqual(yield* page({ since: at(-60 * minute) }), ["log_c", "log_b", "log_a", "log_old"])
        assert.deepStrictEqual(yield* page({ deploymentId: "dep_b" }), ["log_a"])
        assert.deepStrictEqual(yield* page({ outcome: "timeout" }), ["log_c"])
        assert.deepStrictEqual(yield* page({ outcome: "canceled" }), [])
      })
    )

    it.effect("an event of a project that does not exist is dropped; the others are kept", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const project = yield* givenProject
        const kept = row(project.id)
        assert.strictEqual(yield* logs.insert([row(uniqueId("prj")), kept]), 1)
        assert.deepStrictEqual(ids(yield* logs.list(project.id, { limit: 10, since: at(-minute) })), [kept.event.id])
        assert.strictEqual(yield* logs.insert([]), 0)
      })
    )

    it.effect("after an event: the project's later events in recording order; none for an id it does not hold", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const project = yield* givenProject
        const other = yield* givenProject
        // Recording order differs from the events' own times.
        const first = row(project.id, { timestamp: at(5 * minute) })
        const second = row(project.id, { timestamp: at(1 * minute) })
        const third = row(project.id, { timestamp: at(3 * minute) })
        const foreign = row(other.id)
        yield* logs.insert([first, second])
        yield* logs.insert([foreign, third])
        assert.deepStrictEqual(
          Option.map(yield* logs.after(project.id, first.event.id, 10), ids),
          Option.some([second.event.id, third.event.id])
        )
        assert.deepStrictEqual(
          Option.map(yield* logs.after(project.id, first.event.id, 1), ids),
          Option.some([second.event.id])
        )
        assert.deepStrictEqual(Option.map(yield* logs.after(project.id, third.event.id, 10), ids), Option.some([]))
        assert.isTrue(Option.isNone(yield* logs.after(project.id, foreign.event.id, 10)))
        assert.isTrue(Option.isNone(yield* logs.after(project.id, uniqueId("log"), 10)))
        assert.deepStrictEqual(
          ids(yield* logs.byIds(project.id, [third.event.id, foreign.event.id, first.event.id, uniqueId("log")])),
          [first.event.id, third.event.id]
        )
        assert.deepStrictEqual(yield* logs.byIds(project.id, []), [])
      })
    )

    it.effect("a subscriber hears every event recorded after it subscribed, with its project, in order", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const logs = yield* Logs.LogStore
          const project = yield* givenProject
          const before = row(project.id)
          yield* logs.insert([before])
          const feed = yield* logs.watch
          const recorded = [row(project.id), row(project.id)]
          yield* logs.insert([recorded[0]!])
          yield* logs.insert([recorded[1]!])
          const heard = new Array<Logs.LogNote>()
          const wanted = recorded.map((event) => event.event.id)
          yield* Effect.gen(function* () {
            while (!wanted.every((id) => heard.some((note) => note.id === id))) heard.push(...(yield* feed.next))
          })
          const mine = heard.filter((note) => note.projectId === project.id).map((note) => note.id)
          assert.deepStrictEqual(mine, wanted)
        })
      )
    )

    it.effect("a subscriber hears each event of a large batch once, per project in recording order", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const logs = yield* Logs.LogStore
          const project = yield* givenProject
          const other = yield* givenProject
          const feed = yield* logs.watch
          // Interleaved, and more of each project's than one announcement may carry (an adapter may group them).
          const recorded = Array.from({ length: 260 }, (_, index) => row(index % 3 === 0 ? other.id : project.id))
          assert.strictEqual(yield* logs.insert(recorded), recorded.length)
          const heard = new Array<Logs.LogNote>()
          const ours = (note: Logs.LogNote) => note.projectId === project.id || note.projectId === other.id
          while (heard.length < recorded.length) heard.push(...(yield* feed.next).filter(ours))
          const of = (projectId: Kernel.ProjectId) =>
            heard.filter((note) => note.projectId === projectId).map((note) => note.id)
          const wanted = (projectId: Kernel.ProjectId) =>
            recorded.filter((one) => one.projectId === projectId).map((one) => one.event.id)
          assert.deepStrictEqual(of(project.id), wanted(project.id))
          assert.deepStrictEqual(of(other.id), wanted(other.id))
          assert.strictEqual(heard.length, recorded.length)
        })
      )
    )

    it.effect("purge drops events older than the window and all but a project's newest in recording order", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const busy = yield* givenProject
        const quiet = yield* givenProject
        const old = row(quiet.id, { timestamp: at(-2 * minute) })
        const recent = row(quiet.id, { timestamp: at(0) })
        const busyRows = Array.from({ length: 5 }, (_, index) => row(busy.id, { timestamp: at(-index * 1000) }))
        yield* logs.insert([old, recent])
        for (const event of busyRows) yield* logs.insert([event])
        const purged = yield* logs.purge({ since: at(-minute), keep: 3 })
        assert.isAtLeast(purged, 3)
        const all = (projectId: Kernel.ProjectId) =>
          Effect.map(logs.list(projectId, { limit: 50, since: at(-60 * minute) }), ids)
        assert.deepStrictEqual(yield* all(quiet.id), [recent.event.id])
        // The last three recorded are kept, whatever their own times.
        assert.deepStrictEqual(
          yield* all(busy.id),
          busyRows.slice(2).map((event) => event.event.id)
        )
        const more = [row(busy.id, { timestamp: at(1000) }), row(busy.id, { timestamp: at(2000) })]
        yield* logs.insert(more)
        yield* logs.purge({ since: at(-minute), keep: 3 })
        assert.deepStrictEqual(yield* all(busy.id), [more[1]!.event.id, more[0]!.event.id, busyRows[4]!.event.id])
      })
    )

    it.effect("events recorded together are each paged, resumed after, looked up and filtered on their own", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const project = yield* givenProject
        const other = yield* givenProject
        // Two inserts whose events' own times interleave (nodes report late), with another project's in between.
        const first = [5, 1, 9, 3, 7].map((second) =>
          row(project.id, { timestamp: at(second * 1000), deploymentId: second === 3 ? "dep_b" : "dep_a" })
        )
        const second = [8, 2, 6, 4].map((second) =>
          row(project.id, { timestamp: at(second * 1000), outcome: second === 6 ? "exception" : "ok" })
        )
        assert.strictEqual(yield* logs.insert([first[0]!, first[1]!, row(other.id), ...first.slice(2)]), 6)
        assert.strictEqual(yield* logs.insert(second), 4)
        const recorded = [...first, ...second].map((one) => one.event)
        const newest = [...recorded].sort((a, b) => (a.timestamp < b.timestamp ? 1 : -1)).map((event) => event.id)
        // Walked two at a time with the cursor, the pages are the events newest first, each once.
        const walked: Array<string> = []
        let before: Logs.LogListQuery["before"]
        for (;;) {
          const page = yield* logs.list(project.id, { limit: 2, since: at(0), before })
          walked.push(...ids(page))
          const last = page.at(-1)
          if (page.length < 2 || last === undefined) break
          before = { createdAt: last.timestamp, id: last.id }
        }
        assert.deepStrictEqual(walked, newest)
        assert.deepStrictEqual(ids(yield* logs.list(project.id, { limit: 3, since: at(4000) })), newest.slice(0, 3))
        assert.deepStrictEqual(ids(yield* logs.list(project.id, { limit: 10, since: at(0), deploymentId: "dep_b" })), [
          first[3]!.event.id
        ])
        assert.deepStrictEqual(ids(yield* logs.list(project.id, { limit: 10, since: at(0), outcome: "exception" })), [
          second[2]!.event.id
        ])
        // Resumed from inside a batch, across into the next one, in recording order.
        assert.deepStrictEqual(
          Option.map(yield* logs.after(project.id, first[2]!.event.id, 3), ids),
          Option.some([first[3]!.event.id, first[4]!.event.id, second[0]!.event.id])
        )
        assert.deepStrictEqual(
          Option.map(yield* logs.after(project.id, second[1]!.event.id, 10), ids),
          Option.some([second[2]!.event.id, second[3]!.event.id])
        )
        assert.deepStrictEqual(
          ids(yield* logs.byIds(project.id, [second[3]!.event.id, first[1]!.event.id, first[3]!.event.id])),
          [first[1]!.event.id, first[3]!.event.id, second[3]!.event.id]
        )
      })
    )

    it.effect("purge keeps exactly a project's newest events, and only recent ones, inside a batch too", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const project = yield* givenProject
        // One insert: old and recent events mixed, more of them than the purge keeps.
        const batch = [0, -3, 1, 2, -2, 3, 4].map((offset) => row(project.id, { timestamp: at(offset * minute) }))
        yield* logs.insert(batch)
        const later = [row(project.id, { timestamp: at(5 * minute) })]
        yield* logs.insert(later)
        yield* logs.purge({ since: at(-minute), keep: 4 })
        // Of the recent events in recording order (0, 1, 2, 3, 4 and the later 5), the newest four.
        const kept = [batch[3]!, batch[5]!, batch[6]!, later[0]!].map((one) => one.event.id)
        const all = yield* logs.list(project.id, { limit: 50, since: at(-60 * minute) })
        assert.deepStrictEqual([...ids(all)].reverse(), kept)
        assert.deepStrictEqual(
          ids(
            yield* logs.byIds(
              project.id,
              batch.map((one) => one.event.id)
            )
          ),
          kept.slice(0, 3)
        )
        assert.isTrue(Option.isNone(yield* logs.after(project.id, batch[2]!.event.id, 10)))
        assert.deepStrictEqual(
          Option.map(yield* logs.after(project.id, batch[3]!.event.id, 10), ids),
          Option.some(kept.slice(1))
        )
        // Nothing more goes while nothing new is recorded past the count.
        yield* logs.purge({ since: at(-minute), keep: 4 })
        assert.deepStrictEqual(ids(yield* logs.list(project.id, { limit: 50, since: at(-60 * minute) })), ids(all))
        // The count's trim may leave a batch only events that the window later drops.
        const mixed = yield* givenProject
        const young = row(mixed.id, { timestamp: at(0) })
        const aging = row(mixed.id, { timestamp: at(-30 * 1000) })
        yield* logs.insert([young, aging])
        yield* logs.purge({ since: at(-minute), keep: 1 })
        assert.deepStrictEqual(ids(yield* logs.byIds(mixed.id, [young.event.id, aging.event.id])), [aging.event.id])
        yield* logs.purge({ since: at(-10 * 1000), keep: 1 })
        assert.deepStrictEqual(yield* logs.byIds(mixed.id, [young.event.id, aging.event.id]), [])
      })
    )

    it.effect("a project's events go with removeProject and with the project itself", () =>
      Effect.gen(function* () {
        const logs = yield* Logs.LogStore
        const first = yield* givenProject
        const second = yield* givenProject
        const kept = row(second.id)
        yield* logs.insert([row(first.id), kept])
        yield* logs.removeProject(first.id)
        assert.deepStrictEqual(yield* logs.list(first.id, { limit: 10, since: at(-minute) }), [])
        assert.deepStrictEqual(ids(yield* logs.list(second.id, { limit: 10, since: at(-minute) })), [kept.event.id])
        yield* (yield* Projects.ProjectStore).remove(second.id)
        assert.deepStrictEqual(yield* logs.list(second.id, { limit: 10, since: at(-minute) }), [])
        assert.isTrue(Option.isNone(yield* logs.after(second.id, kept.event.id, 10)))
      })
    )
  })
