import { assert, layer } from "@effect/vitest"
import type { Actor } from "@hostplane/core/kernel/Actor"
import { UserStore } from "@hostplane/core/identity/UserStore"
import { makeId, type OrgId, type ProjectId, type UserId } from "@hostplane/core/kernel/Ids"
import { Members } from "@hostplane/core/orgs/Members"
import { Orgs } from "@hostplane/core/orgs/Orgs"
import { OrgStore } from "@hostplane/core/orgs/OrgStore"
import { EnvelopeStorePg, layer as pgStores, OrgStorePg, ProjectStorePg } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { at, makeOrg, makeProject, makeUser } from "@hostplane/testkit/contract/Fixtures"
import { EnvelopeStore } from "@hostplane/core/kernel/EnvelopeStore"
import { ProjectStore } from "@hostplane/core/projects/ProjectStore"
import { Deferred, Effect, Fiber, Layer, Option, Ref, Result } from "effect"
import { SqlClient } from "effect/sql"
import { coreOnPostgres } from "./support/coreOnPostgres.ts"

/**
 * The PostgreSQL `OrgStore` whose `countAdmins` counts and then waits (up to 1 s) until two callers have counted, so
 * two "count admins, then demote" transactions that are not serialised both count before either demotes.
 * `withLock: false` turns `lock` into a no-op.
 */
const rendezvousOrgStore = (withLock: boolean) =>
  Layer.effect(
    OrgStore,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const arrived = yield* Ref.make(0)
      const bothArrived = yield* Deferred.make<void>()
      const rendezvous = Effect.gen(function* () {
        if ((yield* Ref.updateAndGet(arrived, (n) => n + 1)) >= 2) yield* Deferred.succeed(bothArrived, undefined)
        yield* Deferred.await(bothArrived).pipe(Effect.timeoutOption("1 second"))
      })
      return OrgStore.of({
        ...store,
        lock: withLock ? store.lock : () => Effect.void,
        // Count first, then wait: neither caller can demote before both have counted, however the two fibers are
        // scheduled after the rendezvous (waiting before the count let one count after the other had committed).
        countAdmins: (orgId) => Effect.tap(store.countAdmins(orgId), () => rendezvous)
      })
    })
  ).pipe(Layer.provide(OrgStorePg.layer))

/**
 * The write envelope takes the org lock with its reads in one statement (`EnvelopeStore.lock`); without the lock it
 * makes the same reads, one by one, and locks nothing.
 */
const envelopeWithoutLock = Layer.effect(
  EnvelopeStore,
  Effect.gen(function* () {
    const envelope = yield* EnvelopeStore
    const orgs = yield* OrgStore
    const projects = yield* ProjectStore
    return EnvelopeStore.of({
      ...envelope,
      lock: (orgId, userId, projectId) =>
        Effect.gen(function* () {
          const org = yield* orgs.findById(orgId)
          const role = yield* orgs.findMembership(orgId, userId)
          const project = projectId === undefined ? Option.none() : yield* projects.findById(projectId)
          return { org, role, project }
        })
    })
  })
).pipe(Layer.provide(Layer.mergeAll(EnvelopeStorePg.layer, OrgStorePg.layer, ProjectStorePg.layer)))

const givenActor = Effect.fnUntraced(function* (name: string) {
  const subject = `${name}-${crypto.randomUUID()}`
  const { user } = yield* (yield* UserStore).insert(
    { id: makeId("usr", `usr_${crypto.randomUUID()}`), provider: "dev", subject, email: null, name },
    new Date().toISOString()
  )
  return {
    userId: user.id,
    provider: user.provider,
    subject: user.subject,
    email: user.email,
    name: user.name
  } satisfies Actor
})

/** An org whose only two admins each demote themselves at the same moment. */
const raceTwoAdminsDemotingThemselves = Effect.gen(function* () {
  const orgs = yield* Orgs
  const members = yield* Members
  const store = yield* OrgStore
  const alice = yield* givenActor("alice")
  const bob = yield* givenActor("bob")
  const org = yield* orgs.create(alice, { name: "Race" })
  yield* members.add(alice, org.slug, { provider: bob.provider, subject: bob.subject, role: "admin" })
  const outcomes = yield* Effect.all(
    [alice, bob].map((actor) => Effect.result(members.setRole(actor, org.slug, actor.userId, "member"))),
    { concurrency: "unbounded" }
  )
  const row = Option.getOrThrow(yield* store.findBySlug(org.slug))
  return { outcomes, admins: yield* store.countAdmins(row.id) }
})

layer(coreOnPostgres(rendezvousOrgStore(true)), { excludeTestServices: true })(
  "OrgStorePg.lock with the core Members service",
  (it) => {
    it.effect("two admins demoting themselves at once: one succeeds, one gets last_admin, one admin is left", () =>
      Effect.gen(function* () {
        const { outcomes, admins } = yield* raceTwoAdminsDemotingThemselves
        assert.strictEqual(outcomes.filter(Result.isSuccess).length, 1)
        const failures = outcomes.filter(Result.isFailure).map((outcome) => outcome.failure._tag)
        assert.deepStrictEqual(failures, ["LastAdmin"])
        assert.strictEqual(admins, 1)
      })
    )
  }
)

layer(coreOnPostgres(rendezvousOrgStore(false), envelopeWithoutLock), { excludeTestServices: true })(
  "the same race without the org lock",
  (it) => {
    it.effect("both demotions pass and the org is left without an admin: the race the lock prevents is real", () =>
      Effect.gen(function* () {
        const { outcomes, admins } = yield* raceTwoAdminsDemotingThemselves
        assert.strictEqual(outcomes.filter(Result.isSuccess).length, 2)
        assert.strictEqual(admins, 0)
      })
    )
  }
)

/**
 * A transaction holds the org lock and marks the project deleting; meanwhile `read` runs in a transaction of its own,
 * and once its backend waits for the lock (seen in `pg_stat_activity`, its statement matching `waiting`), the holder
 * commits. Answers what `read` saw.
 */
const readAfterHolder = <A>(
  waiting: string,
  read: (ids: { orgId: OrgId; userId: UserId; projectId: ProjectId }) => Effect.Effect<A, unknown, SqlClient.SqlClient>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const org = makeOrg()
    yield* (yield* OrgStore).insert(org)
    const project = makeProject(org.id)
    yield* (yield* ProjectStore).insert(project)
    const user = (yield* (yield* UserStore).insert(makeUser(), at(0))).user
    yield* (yield* OrgStore).addMember(org.id, user.id, "member", at(1))
    const held = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const holder = yield* Effect.forkChild(
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT id FROM orgs WHERE id = ${org.id} FOR UPDATE`
          yield* sql`UPDATE projects SET deleting_since = now() WHERE id = ${project.id}`
          yield* Deferred.succeed(held, undefined)
          yield* Deferred.await(release)
        })
      )
    )
    yield* Deferred.await(held)
    const reader = yield* Effect.forkChild(
      sql.withTransaction(read({ orgId: org.id, userId: user.id, projectId: project.id }))
    )
    const queued = sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE ${`%${waiting}%`}`
    while ((yield* queued)[0]?.n === 0) yield* Effect.sleep("10 millis")
    yield* Deferred.succeed(release, undefined)
    yield* Fiber.join(holder)
    return yield* Fiber.join(reader)
  })

layer(pgStores.pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })(
  "EnvelopeStorePg.lock waiting for the lock",
  (it) => {
    it.effect("reads what the previous holder committed: the project's delete accepted while it waited", () =>
      Effect.gen(function* () {
        const envelope = yield* EnvelopeStore
        const read = yield* readAfterHolder("hostplane_envelope_lock", ({ orgId, userId, projectId }) =>
          envelope.lock(orgId, userId, projectId)
        )
        assert.isTrue(Option.isSome(read.project) && read.project.value.deletingSince !== null)
        assert.deepStrictEqual(read.role, Option.some("member"))
      })
    )

    it.effect(
      "the hazard it avoids: one join under FOR UPDATE OF the org reads its snapshot from before the wait",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const rows = yield* readAfterHolder(
            "FOR UPDATE OF o",
            ({ orgId, projectId }) => sql<{ deletingSince: string | null }>`
            SELECT p.deleting_since FROM orgs o LEFT JOIN projects p ON p.id = ${projectId}
            WHERE o.id = ${orgId} FOR UPDATE OF o`
          )
          assert.deepStrictEqual(rows, [{ deletingSince: null }])
        })
    )
  }
)
