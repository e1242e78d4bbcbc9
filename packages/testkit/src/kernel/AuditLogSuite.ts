import { assert, layer } from "@effect/vitest"
import { Kernel } from "@hostplane/core"
import { Effect, type Layer } from "effect"
import { at, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

const event = (overrides: Partial<Kernel.AuditEvent> = {}): Kernel.AuditEvent => ({
  action: "member.add",
  orgId: uniqueId("org"),
  actorId: uniqueId("usr"),
  target: uniqueId("usr"),
  data: {},
  at: at(0),
  ...overrides
})

/** The `AuditLog` contract: every adapter must pass it; org ids and actions are unique per test. */
export const auditLogSuite = <E>(name: string, store: Layer.Layer<Kernel.AuditLog, E>): void =>
  layer(store)(`${name}: AuditLog contract`, (it) => {
    it.effect("recorded events are listed by org in the order recorded, data kept as given", () =>
      Effect.gen(function* () {
        const audit = yield* Kernel.AuditLog
        const orgId = uniqueId("org")
        const first = event({
          orgId,
          action: "org.rename",
          data: { name: "New", nested: { list: [1, "two", null, true] } }
        })
        const second = event({ orgId, action: "member.role", data: { from: "viewer", role: "admin" }, at: at(minute) })
        const third = event({ orgId, action: "member.remove", actorId: null, target: null, at: at(minute) })
        yield* audit.record(first)
        yield* audit.record(second)
        yield* audit.record(third)
        yield* audit.record(event())
        assert.deepStrictEqual(yield* audit.list({ orgId }), [first, second, third])
      })
    )

    it.effect("list filters by action, and by org and action together", () =>
      Effect.gen(function* () {
        const audit = yield* Kernel.AuditLog
        const action = `contract.${randomSuffix()}`
        const orgId = uniqueId("org")
        const mine = event({ orgId, action })
        const sameActionElsewhere = event({ action })
        const sameOrgOtherAction = event({ orgId, action: `${action}.other` })
        yield* audit.record(mine)
        yield* audit.record(sameActionElsewhere)
        yield* audit.record(sameOrgOtherAction)
        assert.deepStrictEqual(yield* audit.list({ action }), [mine, sameActionElsewhere])
        assert.deepStrictEqual(yield* audit.list({ orgId, action }), [mine])
        assert.deepStrictEqual(yield* audit.list({ orgId }), [mine, sameOrgOtherAction])
      })
    )

    it.effect("events without an org are listed by action and in the unfiltered list", () =>
      Effect.gen(function* () {
        const audit = yield* Kernel.AuditLog
        const action = `contract.${randomSuffix()}`
        const global = event({ action, orgId: null, actorId: null })
        yield* audit.record(global)
        assert.deepStrictEqual(yield* audit.list({ action }), [global])
        const all = yield* audit.list({})
        assert.isTrue(all.some((e) => e.action === action && e.orgId === null))
      })
    )

    it.effect("list of an org without events is empty", () =>
      Effect.gen(function* () {
        const audit = yield* Kernel.AuditLog
        assert.deepStrictEqual(yield* audit.list({ orgId: uniqueId("org") }), [])
      })
    )
  })
