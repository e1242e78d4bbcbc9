// The authenticated request's cache hit, hostplane's `AuthCache` beside Effect's own `Cache` holding the same entries,
// alternated in one process: the figure that decides whether the hand-made cache earns its place.
import { Identity } from "@hostplane/core"
import { UserId } from "@hostplane/core/kernel/Ids"
import { Cache, Clock, Duration, Effect } from "effect"
import * as Os from "node:os"
import { parseOptions } from "./support/harness.ts"
import { spread } from "./support/report.ts"

const usage = `usage: npm run bench:auth-cache -- [options]
  --ops <n>     cache hits per measured batch (default 500000)
  --runs <n>    alternated batches of each (default 6)
  --keys <n>    distinct tokens held (default 1000)`

const { values } = parseOptions(usage, {
  ops: { type: "string" },
  runs: { type: "string" },
  keys: { type: "string" }
})
const ops = Number(values.ops ?? "500000")
const runs = Number(values.runs ?? "6")
const keys = Number(values.keys ?? "1000")

const actorOf = (i: number): Identity.CachedBearer["actor"] => ({
  userId: UserId.make(`usr_${i}`),
  provider: "dev",
  subject: `subject-${i}`,
  email: null,
  name: null
})
const hashes = Array.from({ length: keys }, (_, i) => `hash-${i}`)
const load = (hash: string): Effect.Effect<Identity.CachedBearer["actor"]> =>
  Effect.succeed(actorOf(Number(hash.slice(5))))

const program = Effect.gen(function* () {
  const hostplane = Identity.AuthCache.make({ ttl: Duration.minutes(10), maxEntries: 10_000 })
  const now = yield* Clock.currentTimeMillis
  for (const [i, hash] of hashes.entries()) {
    hostplane.keepBearer(hostplane.ticket(), hash, { actor: actorOf(i), expiresAt: null }, now)
  }
  const effect = yield* Cache.make({ lookup: load, capacity: 10_000, timeToLive: Duration.minutes(10) })
  for (const hash of hashes) yield* Cache.get(effect, hash)

  // What `Identity.authenticate` does once the token is hashed.
  const viaHostplane = (hash: string): Effect.Effect<unknown> =>
    Effect.flatMap(Clock.currentTimeMillis, (at) => {
      const hit = hostplane.bearer(hash, at)
      return hit === undefined ? load(hash) : Effect.succeed(hit.actor)
    })
  const viaEffect = (hash: string) => Cache.get(effect, hash)

  const batch = (lookup: (hash: string) => Effect.Effect<unknown>) =>
    Effect.gen(function* () {
      const started = process.hrtime.bigint()
      for (let i = 0; i < ops; i++) yield* lookup(hashes[i % keys]!)
      return Number(process.hrtime.bigint() - started) / ops
    })

  const ns = { hostplane: [] as Array<number>, effect: [] as Array<number> }
  yield* batch(viaHostplane)
  yield* batch(viaEffect)
  for (let run = 0; run < runs; run++) {
    const order = run % 2 === 0 ? (["hostplane", "effect"] as const) : (["effect", "hostplane"] as const)
    for (const name of order) {
      ns[name].push(name === "hostplane" ? yield* batch(viaHostplane) : yield* batch(viaEffect))
    }
  }
  return ns
})

const ns = await Effect.runPromise(program)
const h = spread(ns.hostplane)
const e = spread(ns.effect)
console.log(
  `auth cache hit, ${ops} hits x ${runs} alternated runs, ${keys} tokens, load ${Os.loadavg()[0]!.toFixed(1)}`
)
console.log(`  hostplane AuthCache  ${h.median.toFixed(0)} ns/hit (${h.min.toFixed(0)}-${h.max.toFixed(0)})`)
console.log(`  Effect Cache         ${e.median.toFixed(0)} ns/hit (${e.min.toFixed(0)}-${e.max.toFixed(0)})`)
console.log(`  Effect/hostplane     ${(e.median / h.median).toFixed(2)}x`)
