import { assert, describe, it } from "@effect/vitest"
import {
  Addons,
  area,
  areas,
  Database,
  Hostnames,
  jobHandlersWith,
  Kernel,
  Jobs,
  Mail,
  Orgs,
  Projects,
  servicesWith
} from "@hostplane/core"
import { Effect, Exit, Layer, Schema } from "effect"
import { memoryPorts } from "./support/CoreMemory.ts"

const ports = memoryPorts

/** What only a runner needs: a mail transport (never called here). */
const transport = Layer.succeed(Mail.MailTransport, {
  send: () => Effect.void,
  sendRaw: (message) => Effect.succeed(message.id)
})

/** Core's areas plus `extra`, with the job handlers a runner would build beside them. */
const registryWith = (extra: ReadonlyArray<ReturnType<typeof fixture>>) =>
  jobHandlersWith(extra).pipe(
    Layer.provideMerge(servicesWith(extra)),
    Layer.provideMerge(Layer.merge(ports, transport))
  )

const registry = Effect.all({
  holdings: Orgs.OrgHoldings,
  teardown: Projects.ProjectTeardown,
  jobs: Jobs.JobHandlers,
  addons: Addons.AddonRegistry,
  paying: Effect.flatMap(Orgs.OrgSubscriptionCheck, (check) => check(Kernel.OrgId.make("org_1")))
})

const kinds = (handlers: ReadonlyArray<Jobs.JobHandler>) => handlers.map((handler) => handler.definition.kind)

/** An area that contributes one of everything, named after `name`. */
const fixture = (name: string, paying: boolean) =>
  area({
    name,
    stores: [],
    services: Layer.empty,
    holdings: [Effect.succeed({ kind: name, count: () => Effect.succeed({ count: 0, names: [] }) })],
    subscription: Effect.succeed(() => Effect.succeed(paying)),
    teardown: [Effect.succeed({ phase: "data" as const, run: () => Effect.void })],
    jobs: [
      Effect.succeed(
        Jobs.handler(Jobs.define({ kind: `${name}_job`, payload: Schema.Unknown, phases: ["only"] }), {
          run: () => Effect.void
        })
      )
    ]
  })

describe("area registry", () => {
  it.effect("every registered area's holdings, teardown steps and job handlers are present at once", () =>
    Effect.gen(function* () {
      const { holdings, teardown, jobs, addons, paying } = yield* registry
      const declared = (pick: (area: (typeof areas)[number]) => ReadonlyArray<unknown> | undefined) =>
        areas.flatMap((area) => pick(area) ?? []).length
      assert.strictEqual(
        holdings.length,
        declared((area) => ("holdings" in area ? area.holdings : undefined))
      )
      assert.strictEqual(
        teardown.length,
        declared((area) => ("teardown" in area ? area.teardown : undefined))
      )
      // An entry answers one handler or several (the database area's operations and schedule in one), each kind once.
      assert.isAtLeast(
        jobs.length,
        declared((area) => ("jobs" in area ? area.jobs : undefined))
      )
      assert.strictEqual(new Set(kinds(jobs)).size, jobs.length)
      assert.include(
        holdings.map((counter) => counter.kind),
        "projects"
      )
      assert.includeMembers(kinds(jobs), [
        Mail.sendMail.kind,
        Hostnames.hostnameCheck.kind,
        Projects.projectDelete.kind,
        Database.restoreGeneration.kind,
        Database.deleteDatabase.kind,
        Database.databaseSchedule.kind,
        Database.databaseNodePurge.kind
      ])
      assert.strictEqual(
        addons.size,
        declared((area) => ("addon" in area ? [area.addon] : undefined))
      )
      assert.includeMembers([...addons.keys()], ["ai", "email", "auth", "storage"])
      assert.isFalse(paying, "nobody has a subscription: every area's check says no one pays")
    }).pipe(Effect.provide(registryWith([])))
  )

  it.effect("three more areas each keep their holdings, teardown step, job and subscription check", () =>
    Effect.gen(function* () {
      const { holdings, teardown, jobs, paying } = yield* registry
      const ownTeardown = areas.flatMap((area): ReadonlyArray<unknown> =>
        "teardown" in area ? area.teardown : []
      ).length
      // Core's own holdings first (in area order), then the extra areas' in theirs.
      assert.deepStrictEqual(
        holdings.map((counter) => counter.kind),
        ["projects", "zones", "domains", "repositories", "alpha", "beta", "gamma"]
      )
      assert.strictEqual(teardown.length, ownTeardown + 3)
      assert.deepStrictEqual(kinds(jobs).slice(-3), ["alpha_job", "beta_job", "gamma_job"])
      assert.includeMembers(kinds(jobs), [
        Mail.sendMail.kind,
        Hostnames.hostnameCheck.kind,
        Projects.projectDelete.kind
      ])
      assert.isTrue(paying, "one area's check saying the org pays is enough")
    }).pipe(Effect.provide(registryWith([fixture("alpha", false), fixture("beta", true), fixture("gamma", false)])))
  )

  it.effect("two areas registering the same add-on is refused when the services are built", () =>
    Effect.gen(function* () {
      const addon = (name: string) =>
        area({
          name,
          stores: [],
          services: Layer.empty,
          addon: Effect.succeed({
            name: "storage" as const,
            granted: () => Effect.succeed(false),
            connected: Effect.succeed(true),
            status: () => Effect.succeed(null),
            grant: () => Effect.succeed({ answer: null, changed: false }),
            revoke: () => Effect.succeed(false)
          })
        })
      const exit = yield* Effect.exit(
        Effect.provide(Addons.AddonRegistry, servicesWith([addon("one"), addon("two")]).pipe(Layer.provideMerge(ports)))
      )
      assert.isTrue(Exit.isFailure(exit))
    })
  )
})
