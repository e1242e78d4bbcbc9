import { assert, layer } from "@effect/vitest"
import { Kernel, Logs } from "@hostplane/core"
import { Effect, Layer, PubSub } from "effect"
import { givenProject } from "../src/contract/Fixtures.ts"
import * as LogStoreMemory from "../src/logs/LogStoreMemory.ts"
import { MemoryState } from "../src/memory/MemoryState.ts"
import * as OrgStoreMemory from "../src/orgs/OrgStoreMemory.ts"
import * as ProjectStoreMemory from "../src/projects/ProjectStoreMemory.ts"
import { makeEvent } from "../src/logs/LogStoreSuite.ts"

/** An event of `projectId` recorded now. */
const row = (projectId: Kernel.ProjectId): Logs.LogEventRow => ({
  projectId,
  event: makeEvent({ timestamp: new Date().toISOString() })
})

const stores = Layer.mergeAll(OrgStoreMemory.layer, ProjectStoreMemory.layer).pipe(
  Layer.provideMerge(MemoryState.layer)
)

// The memory store publishes a note after its write: a feed opened in between hears a note of an event recorded
// before it opened. Driven here by handing the feed that note again once it is open.
layer(stores)("the memory runtime log feed", (it) => {
  it.effect("a feed never announces an event recorded before it opened, even when its note comes later", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const state = yield* MemoryState
        const notes = yield* PubSub.unbounded<LogStoreMemory.MemoryLogNote>()
        const logs = LogStoreMemory.make(state, notes)
        const project = yield* givenProject
        const early = yield* PubSub.subscribe(notes)
        const before = row(project.id)
        yield* logs.insert([before])
        const [late] = yield* PubSub.takeAll(early)
        const feed = yield* logs.watch
        yield* PubSub.publish(notes, late!)
        const after = row(project.id)
        yield* logs.insert([after])
        assert.deepStrictEqual(
          (yield* feed.next).map((note) => note.id),
          [after.event.id]
        )
      })
    )
  )
})
