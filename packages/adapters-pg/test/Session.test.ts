import { assert, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { layer as pgStores } from "@hostplane/adapters-pg"
import { channel as authChannel } from "@hostplane/adapters-pg/identity/AuthCachePg"
import { channel as zonesChannel } from "@hostplane/adapters-pg/dns/ZoneStorePg"
import { channel as jobsChannel } from "@hostplane/adapters-pg/jobs/JobStorePg"
import { channel as revisionChannel } from "@hostplane/adapters-pg/kernel/NodeRevisionsPg"
import { channel as certificatesChannel } from "@hostplane/adapters-pg/tls/CertificateStorePg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Dns, Identity, Jobs, Kernel, Logs, Tls } from "@hostplane/core"
import { givenProject } from "@hostplane/testkit/contract/Fixtures"
import { makeEvent } from "@hostplane/testkit/logs/LogStoreSuite"
import { Effect, Layer, Option } from "effect"

/** Checks `check` every 50 ms until it holds; dies after 20 s (a feed that never comes back). */
const eventually = <E, R>(what: string, check: Effect.Effect<boolean, E, R>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 400; i++) {
      if (yield* check) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.die(new Error(`${what}: not within 20 s`))
  })

// A process's feeds (the auth cache's, the job runner's, the node revision's for the edge and the node, the zones',
// the certificates' and the runtime logs') listen, and its job runners hold their locks, on one session: one backend
// instead of one each. Losing it loses every feed and lock at once, so each one's recovery runs, and they all come
// back on one new session.
layer(pgStores.pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })(
  "PostgreSQL's session",
  (it) => {
    it.effect(
      "every feed and runner lock of a process is on one session; its loss loses each, and all come back on one",
      () =>
        Effect.scoped(
          Effect.gen(function* () {
            const sql = yield* PgClient.PgClient
            const jobs = yield* Jobs.JobStore
            const revisions = yield* Kernel.NodeRevisions
            const zones = yield* Dns.ZoneStore
            const certificates = yield* Tls.CertificateStore
            const logs = yield* Logs.LogStore
            const cache = yield* Identity.AuthCache
            const project = yield* givenProject

            // The backends of this database whose last statement was a LISTEN (the test's own pool never sends one).
            const listeners = sql<{ readonly pid: number }>`SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND query ~* '^\\s*LISTEN\\y'`
            // The auth cache serves what it keeps only while its feed listens.
            const userId = `user_${crypto.randomUUID()}`
            const authServes = Effect.sync(() => {
              cache.keepMemberships(cache.ticket(), userId, [], Date.now())
              return cache.memberships(userId, Date.now()) !== undefined
            })
            const notify = (channel: string, payload: string) => sql`SELECT pg_notify(${channel}, ${payload})`
            // The backend holding a runner's session lock (its owner id starts with the lock's key).
            const lockHolder = (owner: string) =>
              sql<{ readonly pid: number }>`SELECT pid FROM pg_locks WHERE locktype = 'advisory'
                AND classid = ${0x686a6f62} AND objid = ${Number(owner.split(".")[0])} AND objsubid = 2 AND granted`

            const watchAll = Effect.gen(function* () {
              return {
                jobs: yield* jobs.watch,
                edge: yield* revisions.watch,
                converge: yield* revisions.watch,
                zones: yield* zones.watch,
                certificates: yield* certificates.watch,
                logs: yield* logs.watch
              }
            })
            /** Every feed hears its channel, and the auth cache forgets the user it is told of. */
            const hearAll = (feeds: Effect.Success<typeof watchAll>, round: string) =>
              Effect.gen(function* () {
                yield* eventually("the auth cache serves", authServes)
                yield* notify(jobsChannel, `kind_${round}`)
                yield* notify(revisionChannel, "")
                yield* notify(zonesChannel, `zone-${round}.test`)
                yield* notify(certificatesChannel, `name-${round}.test`)
                yield* notify(authChannel, `u:${userId}`)
                assert.include(yield* feeds.jobs.next, `kind_${round}`)
                yield* feeds.edge.next
                yield* feeds.converge.next
                assert.include(yield* feeds.zones.next, `zone-${round}.test`)
                assert.include(yield* feeds.certificates.next, `name-${round}.test`)
                // The log store listens again by itself (every second): an event recorded before that is not announced.
                yield* eventually(
                  "the log feed hears",
                  Effect.gen(function* () {
                    const event = makeEvent({ timestamp: new Date().toISOString() })
                    yield* logs.insert([{ projectId: project.id, event }])
                    const heard = Effect.repeat(feeds.logs.next, {
                      until: (notes) => notes.some((note) => note.id === event.id)
                    })
                    return Option.isSome(yield* Effect.timeoutOption(heard, "1 second"))
                  })
                )
                yield* eventually(
                  "the auth cache hears",
                  Effect.sync(() => cache.memberships(userId, Date.now()) === undefined)
                )
              })

            const first = yield* watchAll
            yield* hearAll(first, "one")
            const before = yield* listeners
            assert.strictEqual(before.length, 1, "one connection listens")
            const runner = yield* jobs.register
            assert.deepStrictEqual(yield* lockHolder(runner.owner), before, "the runner's lock is on that session")
            assert.isTrue(yield* runner.alive)

            yield* sql`SELECT pg_terminate_backend(${before[0]!.pid})`
            assert.strictEqual((yield* Effect.flip(first.jobs.next))._tag, "JobFeedLost")
            assert.strictEqual((yield* Effect.flip(first.edge.next))._tag, "RevisionFeedLost")
            assert.strictEqual((yield* Effect.flip(first.converge.next))._tag, "RevisionFeedLost")
            assert.strictEqual((yield* Effect.flip(first.zones.next))._tag, "ZoneFeedLost")
            assert.strictEqual((yield* Effect.flip(first.certificates.next))._tag, "CertificateFeedLost")
            assert.isFalse(yield* runner.alive)
            yield* eventually(
              "the lost session's lock is gone",
              Effect.map(lockHolder(runner.owner), (rows) => rows.length === 0)
            )
            // The auth cache stops serving until its feed listens again (it retries every second).
            yield* eventually(
              "the auth cache stops serving",
              Effect.map(authServes, (serves) => !serves)
            )

            // Each consumer watches again, as their recovery does; the log feed and the auth cache do by themselves.
            const second = yield* watchAll
            yield* hearAll(second, "two")
            const after = yield* listeners
            assert.strictEqual(after.length, 1, "one connection listens again")
            assert.notStrictEqual(after[0]!.pid, before[0]!.pid)
            // The runner registers again, as its loop does once `alive` is false: on the new session.
            const again = yield* jobs.register
            assert.deepStrictEqual(yield* lockHolder(again.owner), after)
          })
        ),
      60_000
    )
  }
)
