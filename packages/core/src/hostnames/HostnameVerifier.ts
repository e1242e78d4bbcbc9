import { Context, Duration, Effect, Layer, Option } from "effect"
import { Settings } from "../kernel/Settings.ts"
import { isoAfter, nowIso } from "../kernel/Time.ts"
import { checkOwnership, type DnsResolver, type OwnershipCheck } from "./DnsResolver.ts"
import type { HostedZones } from "./HostedZones.ts"
import type { HostnameRow } from "./Hostname.ts"
import { verificationRecord } from "./HostnameName.ts"
import { HostnameStore } from "./HostnameStore.ts"
import { runEvery } from "../kernel/Background.ts"

/**
 * The two halves of an ownership check: `observe` asks DNS (slow, so never inside a transaction), `record` stores the
 * outcome on the row with that token and answers the row as it then stands (none when it was removed meanwhile).
 */
export const ownershipSteps = Effect.gen(function* () {
  const store = yield* HostnameStore
  const settings = yield* Settings
  const dns = yield* Effect.context<DnsResolver | HostedZones>()
  const observe = (row: HostnameRow, verifyToken: string) =>
    checkOwnership({
      host: row.name,
      orgId: row.orgId,
      verify: verificationRecord(row.name, verifyToken),
      fallbackOrigin: settings.fallbackOrigin
    }).pipe(Effect.provideContext(dns))
  const record = Effect.fnUntraced(function* (row: HostnameRow, verifyToken: string, outcome: OwnershipCheck) {
    if (!outcome.verified) return yield* store.recordFailure(row.name, verifyToken, outcome.observed)
    yield* Effect.logInfo("hostname verified", { hostname: row.name, method: outcome.method })
    return yield* store.markActive(row.name, verifyToken, yield* nowIso)
  })
  return { observe, record }
})

/**
 * Checks one pending hostname now and records the outcome: `active` when ownership is proven, otherwise `lastError`
 * holds what DNS showed. Answers the row as it then stands (none when it was removed meanwhile); rows that are not
 * pending are answered unchanged.
 */
export const ownershipCheck = Effect.map(ownershipSteps, ({ observe, record }) =>
  Effect.fn("Hostnames.check")(function* (row: HostnameRow) {
    if (row.status !== "pending_dns" || row.verifyToken === null) return Option.some(row)
    return yield* record(row, row.verifyToken, yield* observe(row, row.verifyToken))
  })
)

export interface HostnameVerifierOptions {
  /** The background cycle (spec part 8: 1 minute); also how long a claimed name stays hidden from other runners. */
  readonly interval: Duration.Duration
  /** Names claimed per round trip; a cycle claims until no name is due. */
  readonly batch: number
  /** Names checked at once. */
  readonly concurrency: number
}

export const defaultHostnameVerifierOptions: HostnameVerifierOptions = {
  interval: Duration.minutes(1),
  batch: 100,
  concurrency: 8
}

/**
 * The background verification of spec 4.4: every cycle each `pending_dns` name is checked once. A claim makes the name
 * due again one cycle later, so several runners (replicas) on one store share the names and a crash only delays one.
 */
export class HostnameVerifier extends Context.Service<
  HostnameVerifier,
  {
    /** Checks every name due now; answers how many it checked. */
    readonly runOnce: Effect.Effect<number>
  }
>()("@hostplane/core/hostnames/HostnameVerifier") {
  static readonly make = (options: HostnameVerifierOptions = defaultHostnameVerifierOptions) =>
    Layer.effect(
      HostnameVerifier,
      Effect.gen(function* () {
        const store = yield* HostnameStore
        const check = yield* ownershipCheck
        const round = Effect.gen(function* () {
          const due = yield* store.claimDue(yield* nowIso, yield* isoAfter(options.interval), options.batch)
          yield* Effect.forEach(
            due,
            (row) =>
              check(row).pipe(
                Effect.catchCause((cause) => Effect.logWarning("hostname check failed", { hostname: row.name, cause }))
              ),
            { concurrency: options.concurrency, discard: true }
          )
          return due.length
        })
        const runOnce = Effect.gen(function* () {
          let checked = 0
          for (;;) {
            const count = yield* round
            checked += count
            if (count < options.batch) return checked
          }
        }).pipe(Effect.withSpan("HostnameVerifier.runOnce"))
        return HostnameVerifier.of({ runOnce })
      })
    )

  /** Runs a cycle every `interval` for the lifetime of the layer. */
  static readonly background = (options: HostnameVerifierOptions = defaultHostnameVerifierOptions) =>
    runEvery(
      "hostname verifier",
      options.interval,
      Effect.flatMap(Effect.service(HostnameVerifier), (runner) => runner.runOnce)
    ).pipe(Layer.provideMerge(HostnameVerifier.make(options)))
}
