import type { Logs } from "@hostplane/core"
import { Context, Deferred, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { dueAt, holdMs, makeEventBatches, maxBatch, quietBatch } from "../src/runtime/EventBatches.ts"

const event = (n: number): Logs.LogEventInput => ({
  projectId: "p1",
  deploymentId: "d1",
  timestamp: n,
  outcome: "ok",
  request: { method: "GET", url: `http://app.example/${n}` },
  response: { status: 200 },
  durationMs: 0,
  logs: [],
  exceptions: []
})
const events = (from: number, count: number) => Array.from({ length: count }, (_, index) => event(from + index))

const until = async (check: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5))
  return check()
}

/** Batches over a store whose writes end when the test says, on a clock the test moves. */
const held = () => {
  let time = 1_000_000
  const writes: Array<{ readonly batch: ReadonlyArray<Logs.LogEventInput>; readonly done: Deferred.Deferred<void> }> =
    []
  const write = (batch: ReadonlyArray<Logs.LogEventInput>) =>
    Effect.gen(function* () {
      const done = yield* Deferred.make<void>()
      writes.push({ batch, done })
      yield* Deferred.await(done)
    })
  const batches = makeEventBatches(write, Context.empty(), () => time)
  return {
    batches,
    writes,
    advance: (ms: number) => (time += ms),
    finish: (index: number) => Effect.runSync(Deferred.succeed(writes[index]!.done, undefined)),
    written: () => writes.flatMap((one) => one.batch.map((event) => event.timestamp))
  }
}

describe("the invoker writes its invocation events in batches that grow with the rate", () => {
  it("a tick writes every held event when few are held, a full batch as soon as one is held, else waits for the hold", () => {
    expect(dueAt(0, holdMs)).toBe(0)
    expect(dueAt(1, 0)).toBe(1)
    expect(dueAt(quietBatch, 0)).toBe(quietBatch)
    expect(dueAt(quietBatch + 1, 0)).toBe(0)
    expect(dueAt(quietBatch + 1, holdMs - 1)).toBe(0)
    expect(dueAt(quietBatch + 1, holdMs)).toBe(quietBatch + 1)
    expect(dueAt(maxBatch - 1, holdMs)).toBe(maxBatch - 1)
    expect(dueAt(maxBatch, 0)).toBe(maxBatch)
    expect(dueAt(3 * maxBatch, 0)).toBe(maxBatch)
  })

  it("a quiet node's events are written at the next tick", async () => {
    const { batches, writes, finish, written } = held()
    batches.add(events(0, 3))
    expect(writes).toHaveLength(0)
    batches.tick()
    expect(await until(() => writes.length === 1)).toBe(true)
    expect(written()).toEqual([0, 1, 2])
    finish(0)
    batches.add(events(3, 1))
    expect(await until(() => (batches.tick(), writes.length === 2))).toBe(true)
    expect(written()).toEqual([0, 1, 2, 3])
  })

  it("a busy node's events wait for a full batch or the hold, and a write that leaves too few for a batch is not followed until a tick", async () => {
    const { batches, writes, advance, finish, written } = held()
    batches.add(events(0, 100))
    batches.tick()
    advance(holdMs - 1)
    batches.tick()
    expect(writes).toHaveLength(0)
    advance(1)
    batches.tick()
    expect(await until(() => writes.length === 1)).toBe(true)
    expect(writes[0]!.batch).toHaveLength(100)

    // Held while a write is in flight: 1,200 events are two full batches written one after the other, and 200 left.
    batches.add(events(100, 1_200))
    batches.tick()
    expect(writes).toHaveLength(1)
    finish(0)
    expect(await until(() => writes.length === 2)).toBe(true)
    expect(writes[1]!.batch).toHaveLength(maxBatch)
    finish(1)
    expect(await until(() => writes.length === 3)).toBe(true)
    expect(writes[2]!.batch).toHaveLength(maxBatch)
    finish(2)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(writes).toHaveLength(3)
    batches.tick()
    expect(writes).toHaveLength(3)
    advance(holdMs)
    expect(await until(() => (batches.tick(), writes.length === 4))).toBe(true)
    expect(written()).toEqual(Array.from({ length: 1_300 }, (_, index) => index))
  })

  it("a full batch is written as soon as it is held, without a tick", async () => {
    const { batches, writes } = held()
    batches.add(events(0, maxBatch - 1))
    expect(writes).toHaveLength(0)
    batches.add(events(maxBatch - 1, 1))
    expect(await until(() => writes.length === 1)).toBe(true)
    expect(writes[0]!.batch).toHaveLength(maxBatch)
  })

  it("a stopping node writes everything held after the write in flight, in order, and no tick writes again", async () => {
    const { batches, writes, finish, written } = held()
    batches.add(events(0, 2))
    batches.tick()
    expect(await until(() => writes.length === 1)).toBe(true)
    batches.add(events(2, 1_100))
    const drained = Effect.runPromise(batches.drain)
    batches.tick()
    finish(0)
    for (let index = 1; index <= 3; index++) {
      expect(await until(() => writes.length === index + 1)).toBe(true)
      finish(index)
    }
    await drained
    expect(writes.map((one) => one.batch.length)).toEqual([2, maxBatch, maxBatch, 100])
    expect(written()).toEqual(Array.from({ length: 1_102 }, (_, index) => index))
    batches.add(events(1_102, 3))
    batches.tick()
    expect(writes).toHaveLength(4)
  })
})
