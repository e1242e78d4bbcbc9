import { assert, layer } from "@effect/vitest"
import { Hostnames, Orgs, Projects, Tls } from "@hostplane/core"
import { Effect, Fiber, type Layer, Option } from "effect"
import { makeOrg, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

export type CertificateStoreSuiteServices =
  Tls.CertificateStore | Hostnames.HostnameStore | Projects.ProjectStore | Orgs.OrgStore

/** A new project in a new org: its default hostname is an active name. */
const activeName = Effect.gen(function* () {
  const org = makeOrg()
  yield* (yield* Orgs.OrgStore).insert(org)
  const name = `p-${randomSuffix()}`
  const row: Projects.ProjectRow = {
    id: uniqueId("prj"),
    orgId: org.id,
    name,
    hostname: `${name}.apps.contract.test`,
    createdAt: "2026-01-01T00:00:00.000Z",
    liveDeploymentId: null,
    deletingSince: null
  }
  yield* (yield* Projects.ProjectStore).insert(row)
  return row
}).pipe(Effect.orDie)

const certificate = (name: string, overrides: Partial<Tls.CertificateRow> = {}): Tls.CertificateRow => ({
  name,
  status: "pending",
  chain: null,
  key: null,
  expiresAt: null,
  orderUrl: null,
  orderKey: null,
  lastError: null,
  failures: 0,
  retryAt: null,
  updatedAt: "2026-01-01T00:00:00.000Z",
  ...overrides
})

const sealed = { keyId: "k1", ciphertext: "c2VhbGVk" }
const now = "2026-06-01T00:00:00.000Z"
const renewBy = "2026-07-01T00:00:00.000Z"

/** The `CertificateStore` contract: every adapter must pass it. */
export const certificateStoreSuite = <E>(name: string, stores: Layer.Layer<CertificateStoreSuiteServices, E>): void =>
  layer(stores)(`${name}: CertificateStore contract`, (it) => {
    it.effect("put replaces the row; served lists complete certificates only; remove forgets", () =>
      Effect.gen(function* () {
        const store = yield* Tls.CertificateStore
        const project = yield* activeName
        const host = project.hostname
        const row = certificate(host, { orderUrl: "https://ca.test/order/1", orderKey: sealed })
        yield* store.put(row)
        assert.deepStrictEqual(yield* store.find(host), Option.some(row))
        assert.isFalse((yield* store.served).some((served) => served.name === host))
        const issued = certificate(host, {
          status: "issued",
          chain: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
          key: sealed,
          expiresAt: "2026-09-01T00:00:00.000Z"
        })
        yield* store.put(issued)
        assert.deepStrictEqual(yield* store.find(host), Option.some(issued))
        const served = (yield* store.served).find((entry) => entry.name === host)
        assert.deepStrictEqual(served, { name: host, chain: issued.chain!, key: sealed, expiresAt: issued.expiresAt! })
        yield* store.remove(host)
        assert.isTrue(Option.isNone(yield* store.find(host)))
      })
    )

    it.effect("due: active names without a row, failures whose retry time passed, certificates to renew", () =>
      Effect.gen(function* () {
        const store = yield* Tls.CertificateStore
        const [fresh, waiting, retry, valid, expiring] = yield* Effect.all([
          activeName,
          activeName,
          activeName,
          activeName,
          activeName
        ])
        yield* store.put(certificate(waiting.hostname, { status: "failed", retryAt: "2026-06-02T00:00:00.000Z" }))
        yield* store.put(certificate(retry.hostname, { status: "failed", retryAt: "2026-05-31T00:00:00.000Z" }))
        yield* store.put(
          certificate(valid.hostname, {
            status: "issued",
            chain: "c",
            key: sealed,
            expiresAt: "2026-08-01T00:00:00.000Z"
          })
        )
        yield* store.put(
          certificate(expiring.hostname, {
            status: "issued",
            chain: "c",
            key: sealed,
            expiresAt: "2026-06-20T00:00:00.000Z"
          })
        )
        const due = new Set(yield* store.due(now, renewBy, 1_000_000))
        assert.isTrue(due.has(fresh.hostname))
        assert.isFalse(due.has(waiting.hostname))
        assert.isTrue(due.has(retry.hostname))
        assert.isFalse(due.has(valid.hostname))
        assert.isTrue(due.has(expiring.hostname))
        // A name that is not active (pending verification) is never due.
        const hostnames = yield* Hostnames.HostnameStore
        const pendingName = `www.t${randomSuffix()}.example`
        yield* hostnames.insert({
          name: pendingName,
          projectId: fresh.id,
          orgId: fresh.orgId,
          kind: "custom",
          status: "pending_dns",
          verifyToken: "t",
          lastError: null,
          createdAt: now,
          verifiedAt: null
        })
        assert.isFalse((yield* store.due(now, renewBy, 1_000_000)).includes(pendingName))
        yield* hostnames.remove(pendingName)
        for (const project of [fresh, waiting, retry, valid, expiring]) yield* store.remove(project.hostname)
      })
    )

    it.effect("a removed hostname's certificate is gone after removeOrphans, and the change is announced", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const store = yield* Tls.CertificateStore
          const hostnames = yield* Hostnames.HostnameStore
          const project = yield* activeName
          const custom = `www.o${randomSuffix()}.example`
          yield* hostnames.insert({
            name: custom,
            projectId: project.id,
            orgId: project.orgId,
            kind: "custom",
            status: "active",
            verifyToken: "t",
            lastError: null,
            createdAt: now,
            verifiedAt: now
          })
          yield* store.put(certificate(custom, { status: "issued", chain: "c", key: sealed, expiresAt: renewBy }))
          yield* store.put(certificate(project.hostname))
          const feed = yield* store.watch
          const seen = yield* Effect.forkChild(
            Effect.gen(function* () {
              const names = new Set<string>()
              while (!names.has(custom)) for (const name of yield* feed.next) names.add(name)
            })
          )
          yield* hostnames.remove(custom)
          // PostgreSQL removes it with the hostname (a cascade), memory at the sweep: either way it is gone after.
          const removed = yield* store.removeOrphans
          assert.isFalse(removed.includes(project.hostname))
          assert.isTrue(Option.isNone(yield* store.find(custom)))
          assert.isTrue(Option.isSome(yield* store.find(project.hostname)))
          yield* Fiber.join(seen)
          yield* store.remove(project.hostname)
        })
      )
    )

    it.effect("the account is claimed once; later claims answer the stored one; its URL is recorded", () =>
      Effect.gen(function* () {
        const store = yield* Tls.CertificateStore
        const first = yield* store.claimAccount({ key: { keyId: "k1", ciphertext: `a${randomSuffix()}` }, url: null })
        const second = yield* store.claimAccount({ key: { keyId: "k1", ciphertext: `b${randomSuffix()}` }, url: null })
        assert.deepStrictEqual(second.key, first.key)
        const url = `https://ca.test/acct/${randomSuffix()}`
        yield* store.setAccountUrl(url)
        assert.deepStrictEqual(yield* store.account, Option.some({ key: first.key, url }))
      })
    )

    it.effect("challenges: published, found by token, removed", () =>
      Effect.gen(function* () {
        const store = yield* Tls.CertificateStore
        const token = `tok${randomSuffix()}`
        assert.isTrue(Option.isNone(yield* store.challenge(token)))
        yield* store.putChallenge(token, `${token}.thumb`, now)
        assert.deepStrictEqual(yield* store.challenge(token), Option.some(`${token}.thumb`))
        yield* store.putChallenge(token, `${token}.again`, now)
        assert.deepStrictEqual(yield* store.challenge(token), Option.some(`${token}.again`))
        yield* store.removeChallenge(token)
        assert.isTrue(Option.isNone(yield* store.challenge(token)))
      })
    )
  })
