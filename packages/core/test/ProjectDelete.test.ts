import { assert, describe, it } from "@effect/vitest"
import { area, Hostnames, Jobs, Orgs, Projects, servicesWith } from "@hostplane/core"
import { Duration, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { memoryPorts, signIn, start } from "./support/CoreMemory.ts"

/** Every teardown phase records itself; the `data` phase fails on its first attempt, as a crash would. */
const recorder = () => {
  const calls: Array<string> = []
  let dataFailures = 1
  const steps: ReadonlyArray<Projects.TeardownStep> = Projects.deletePhases.map((phase) => ({
    phase,
    run: () =>
      Effect.suspend(() => {
        calls.push(phase)
        if (phase === "data" && dataFailures-- > 0) return Effect.die(new Error("node unreachable"))
        return Effect.void
      })
  }))
  return { calls, steps }
}

const runOnce = Jobs.JobRunner.runOnce([Projects.projectDeleteHandler])

describe("project delete (spec 4.3) as a durable operation", () => {
  it.effect(
    "runs the teardown in the spec's order and resumes at the failed phase without repeating earlier ones",
    () => {
      const { calls, steps } = recorder()
      const recording = area({
        name: "recording",
        stores: [],
        services: Layer.empty,
        teardown: steps.map((step) => Effect.succeed(step))
      })
      const core = servicesWith([recording]).pipe(Layer.provideMerge(memoryPorts))
      return Effect.gen(function* () {
        yield* TestClock.setTime(start)
        const { actor } = yield* signIn("alice")
        yield* (yield* Orgs.Orgs).create(actor, { name: "Team", slug: "team" })
        const projects = yield* Projects.Projects
        yield* projects.create(actor, "team", "web")
        const { operationId } = yield* projects.remove(actor, "team", "web", "web")

        yield* runOnce
        let operation = yield* projects.operation(actor, "team", operationId)
        assert.deepStrictEqual(calls, ["routing", "draining", "data"])
        assert.strictEqual(operation.phase, "data")
        assert.isNull(operation.terminalCode)
        // Routing went first: the default hostname no longer routes, while the project record still exists.
        assert.isTrue(Option.isNone(yield* (yield* Hostnames.Hostnames).routeOf("web.apps.localhost")))
        assert.strictEqual((yield* projects.get(actor, "team", "web")).name, "web")

        yield* runOnce
        assert.strictEqual(calls.length, 3, "a failed step waits for its backoff")

        yield* TestClock.adjust(Duration.seconds(5))
        yield* runOnce
        operation = yield* projects.operation(actor, "team", operationId)
        assert.deepStrictEqual(calls, ["routing", "draining", "data", "data", "repositories", "metadata"])
        assert.strictEqual(operation.terminalCode, "done")
        const gone = yield* Effect.flip(projects.get(actor, "team", "web"))
        assert.strictEqual(gone._tag, "NotFound")
      }).pipe(Effect.provide(core))
    }
  )
})
