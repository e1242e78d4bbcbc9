import { assert, layer } from "@effect/vitest"
import { AuditLog, type AuditEvent } from "@hostplane/core/kernel/Audit"
import { Transactor } from "@hostplane/core/kernel/Transactor"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AuditLogPg, TransactorPg } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"

const event = (overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  action: "member.role",
  orgId: `org_${crypto.randomUUID()}`,
  actorId: "usr_actor",
  target: "usr_target",
  data: { from: "admin", role: "viewer" },
  at: "2031-01-01T00:00:00.000Z",
  ...overrides
})

layer(Layer.mergeAll(AuditLogPg.layer, TransactorPg.layer).pipe(Layer.provideMerge(TestDatabase.layer)))(
  "AuditLogPg",
  (it) => {
    it.effect("record then list returns the events of an org, oldest first, data and nulls intact", () =>
      Effect.gen(function* () {
        const audit = yield* AuditLog
        const first = event({ data: { camelCase: 1, snake_case: [true, null], nested: { innerKey: "x" } } })
        const second = event({ orgId: first.orgId, action: "member.remove", actorId: null, target: null, data: {} })
        yield* audit.record(first)
        yield* audit.record(second)
        yield* audit.record(event())
        assert.deepStrictEqual(yield* audit.list({ orgId: first.orgId! }), [first, second])
      })
    )

    it.effect("list filters by action, by both, and lists everything without a filter", () =>
      Effect.gen(function* () {
        const audit = yield* AuditLog
        const action = `test.${crypto.randomUUID()}`
        const a = event({ action })
        const b = event({ action, orgId: null })
        yield* audit.record(a)
        yield* audit.record(b)
        assert.deepStrictEqual(yield* audit.list({ action }), [a, b])
        assert.deepStrictEqual(yield* audit.list({ action, orgId: a.orgId! }), [a])
        const all = yield* audit.list({})
        assert.isTrue(all.length >= 2)
      })
    )

    it.effect("record joins the ambient transaction: a rolled back change leaves no audit row", () =>
      Effect.gen(function* () {
        const audit = yield* AuditLog
        const tx = yield* Transactor
        const rolledBack = event()
        yield* tx
          .withTransaction(Effect.flatMap(audit.record(rolledBack), () => Effect.fail("abort")))
          .pipe(Effect.flip)
        assert.deepStrictEqual(yield* audit.list({ orgId: rolledBack.orgId! }), [])
      })
    )

    it.effect("the audit table has no foreign key, so rows outlive the org they name", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`
          SELECT conname FROM pg_constraint WHERE conrelid = 'audit_events'::regclass AND contype = 'f'`
        assert.deepStrictEqual(rows, [])
      })
    )
  }
)
