import { assert, layer } from "@effect/vitest"
import { layer as pgStores } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { UserStore } from "@hostplane/core/identity/UserStore"
import { makeId } from "@hostplane/core/kernel/Ids"
import { AuditLog } from "@hostplane/core/kernel/Audit"
import { Transactor } from "@hostplane/core/kernel/Transactor"
import { OrgStore } from "@hostplane/core/orgs/OrgStore"
import type { OrgRow } from "@hostplane/core/orgs/Org"
import { Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

const unique = () => crypto.randomUUID().replaceAll("-", "").slice(0, 20)

const makeOrg = (overrides: Partial<OrgRow> = {}): OrgRow => ({
  id: makeId("org", `org_${unique()}`),
  slug: `t-${unique()}`,
  name: "Org",
  plan: "free",
  personal: false,
  createdAt: "2031-01-01T00:00:00.000Z",
  ...overrides
})

layer(pgStores.pipe(Layer.provideMerge(TestDatabase.layer)))("PostgreSQL specifics of the stores", (it) => {
  it.effect("every time column is timestamptz", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = yield* sql<{ tableName: string; columnName: string; dataType: string }>`
        SELECT table_name, column_name, data_type FROM information_schema.columns
        WHERE table_schema = current_schema() AND (column_name LIKE '%\\_at' OR column_name = 'at')
          AND table_name <> 'effect_sql_migrations'`
      assert.isAbove(columns.length, 10)
      assert.deepStrictEqual(
        columns.filter((column) => column.dataType !== "timestamp with time zone"),
        []
      )
    })
  )

  it.effect("times read back in toISOString() form, milliseconds included, so string comparisons hold", () =>
    Effect.gen(function* () {
      const orgs = yield* OrgStore
      const sql = yield* SqlClient.SqlClient
      const org = makeOrg({ createdAt: "2031-06-30T23:59:59.000Z" })
      yield* orgs.insert(org)
      assert.strictEqual(Option.getOrThrow(yield* orgs.findById(org.id)).createdAt, "2031-06-30T23:59:59.000Z")
      // The instant is kept, whatever the session time zone.
      const rows = yield* sql.withTransaction(
        Effect.andThen(
          sql`SET LOCAL TIME ZONE 'Pacific/Auckland'`,
          sql<{ local: string }>`SELECT created_at::text AS local FROM orgs WHERE id = ${org.id}`
        )
      )
      assert.strictEqual(rows[0]?.local, "2031-07-01 11:59:59+12")
      assert.strictEqual(Option.getOrThrow(yield* orgs.findById(org.id)).createdAt, org.createdAt)
    })
  )

  it.effect("concurrent inserts of one identity create one user and hand it to every caller", () =>
    Effect.gen(function* () {
      const users = yield* UserStore
      const subject = `race-${unique()}`
      const results = yield* Effect.all(
        Array.from({ length: 6 }, () =>
          users.insert(
            { id: makeId("usr", `usr_${unique()}`), provider: "dev", subject, email: null, name: null },
            "2031-01-01T00:00:00.000Z"
          )
        ),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(results.filter((result) => result.created).length, 1)
      assert.strictEqual(new Set(results.map((result) => result.user.id)).size, 1)
    })
  )

  it.effect("concurrent inserts of one slug: one org is stored, every other insert is SlugTaken", () =>
    Effect.gen(function* () {
      const orgs = yield* OrgStore
      const slug = `t-${unique()}`
      const exits = yield* Effect.all(
        Array.from({ length: 6 }, () => Effect.exit(orgs.insert(makeOrg({ slug })))),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
      for (const exit of exits.filter(Exit.isFailure)) {
        assert.deepStrictEqual(
          Exit.findErrorOption(exit).pipe(Option.map((error) => error._tag)),
          Option.some("SlugTaken")
        )
      }
    })
  )

  it.effect("the database itself refuses a second open invite for one address of an org", () =>
    Effect.gen(function* () {
      const orgs = yield* OrgStore
      const org = makeOrg()
      yield* orgs.insert(org)
      const invite = {
        id: makeId("inv", `inv_${unique()}`),
        orgId: org.id,
        email: "twice@example.test",
        role: "member" as const,
        tokenHash: `hash-${unique()}`,
        state: "pending" as const,
        expiresAt: "2031-01-08T00:00:00.000Z",
        mailId: null,
        createdAt: "2031-01-01T00:00:00.000Z"
      }
      yield* orgs.insertInvite(invite)
      const exit = yield* Effect.exit(
        orgs.insertInvite({ ...invite, id: makeId("inv", `inv_${unique()}`), tokenHash: `hash-${unique()}` })
      )
      assert.isTrue(Exit.hasDies(exit))
    })
  )

  it.effect("audit data keeps its keys exactly as written: the column name transforms never reach into JSON", () =>
    Effect.gen(function* () {
      const audit = yield* AuditLog
      const event = {
        action: "test.keys",
        orgId: `org_${unique()}`,
        actorId: null,
        target: null,
        data: { camelCase: 1, snake_case: { ledger_id: "x", innerKey: [true, null] } },
        at: "2031-01-01T00:00:00.000Z"
      }
      yield* audit.record(event)
      assert.deepStrictEqual(yield* audit.list({ orgId: event.orgId }), [event])
    })
  )

  it.effect("the audit table has no foreign key, so rows outlive the org they name", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const keys =
        yield* sql`SELECT conname FROM pg_constraint WHERE conrelid = 'audit_events'::regclass AND contype = 'f'`
      assert.deepStrictEqual(keys, [])
    })
  )

  // internal/Transaction.ts: savepoints inside one transaction take turns, each level with its own lock (one lock for
  // every level deadlocked the savepoint inside a savepoint here), a unique violation in one (onUniqueViolation) rolls
  // back to its savepoint and leaves the transaction usable, and what succeeded commits.
  it.effect("concurrent nested transactions and a slug conflict inside one transaction commit what succeeded", () =>
    Effect.gen(function* () {
      const tx = yield* Transactor
      const orgs = yield* OrgStore
      const taken = makeOrg()
      yield* orgs.insert(taken)
      const fresh = Array.from({ length: 4 }, () => makeOrg())
      const conflicts = yield* tx.withTransaction(
        Effect.gen(function* () {
          yield* Effect.all(
            fresh.map((org) => tx.withTransaction(tx.withTransaction(orgs.insert(org)))),
            { concurrency: "unbounded", discard: true }
          )
          // The slug is taken: the insert's savepoint rolls back, the transaction goes on.
          const conflict = yield* Effect.flip(orgs.insert(makeOrg({ slug: taken.slug })))
          const after = makeOrg()
          yield* orgs.insert(after)
          fresh.push(after)
          return conflict._tag
        })
      )
      assert.strictEqual(conflicts, "SlugTaken")
      for (const org of fresh) assert.deepStrictEqual(yield* orgs.findById(org.id), Option.some(org))
    })
  )
})
