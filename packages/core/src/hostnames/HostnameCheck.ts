import { Duration, Effect, Option, Schema } from "effect"
import { define, handler, type JobHandler, stop } from "../jobs/Job.ts"
import { HostnamesConfig } from "./HostnamesConfig.ts"
import { nowIso } from "../kernel/Time.ts"
import { checkOwnership, type DnsResolver, type OwnershipCheck } from "./DnsResolver.ts"
import type { HostedZones } from "./HostedZones.ts"
import type { HostnameRow } from "./Hostname.ts"
import { verificationRecord } from "./HostnameName.ts"
import { HostnameStore } from "./HostnameStore.ts"
import { NodeChanges } from "../kernel/NodeChanges.ts"
import { NodeRevisions } from "../kernel/NodeRevisions.ts"
import { Transactor } from "../kernel/Transactor.ts"

/**
 * The two halves of an ownership check: `observe` asks DNS (slow, so never inside a transaction), `record` stores the
 * outcome on the row with that token and answers the row as it then stands (none when it was removed meanwhile).
 */
export const ownershipSteps = Effect.gen(function* () {
  const store = yield* HostnameStore
  const config = yield* HostnamesConfig
  const tx = yield* Transactor
  const revisions = yield* NodeRevisions
  const nodeChanges = yield* NodeChanges
  const dns = yield* Effect.context<DnsResolver | HostedZones>()
  const observe = (row: HostnameRow, verifyToken: string) =>
    checkOwnership({
      host: row.name,
      orgId: row.orgId,
      verify: verificationRecord(row.name, verifyToken),
      fallbackOrigin: config.fallbackOrigin
    }).pipe(Effect.provideContext(dns))
  // A name that becomes active enters routing: the one place both the API's verify and the job raise the revision.
  const activate = Effect.fnUntraced(function* (row: HostnameRow, verifyToken: string) {
    const before = yield* store.find(row.name)
    const after = yield* store.markActive(row.name, verifyToken, yield* nowIso)
    const wasPending = Option.isSome(before) && before.value.status === "pending_dns"
    if (wasPending && Option.isSome(after)) yield* revisions.raise(row.projectId)
    return after
  })
  const record = Effect.fnUntraced(function* (row: HostnameRow, verifyToken: string, outcome: OwnershipCheck) {
    if (!outcome.verified) return yield* store.recordFailure(row.name, verifyToken, outcome.observed)
    yield* Effect.logInfo("hostname verified", { hostname: row.name, method: outcome.method })
    const after = yield* tx.withTransaction(activate(row, verifyToken))
    yield* nodeChanges.changed(row.projectId)
    return after
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

/**
 * The background verification of spec 4.4, one repeating job per pending name: it checks the name once a minute (spec
 * part 8) and stops once the name is verified, removed, or replaced by a new row of the same name. Several runners
 * share the names, and a crash delays one check by at most a lease.
 */
export const hostnameCheck = define({
  kind: "hostname_check",
  payload: Schema.Struct({ name: Schema.String, verifyToken: Schema.String }),
  phases: ["check"],
  every: Duration.minutes(1)
})

export const hostnameCheckHandler: Effect.Effect<
  JobHandler,
  never,
  HostnameStore | HostnamesConfig | DnsResolver | HostedZones | Transactor | NodeRevisions
> = Effect.gen(function* () {
  const store = yield* HostnameStore
  const check = yield* ownershipCheck
  return handler(hostnameCheck, {
    run: (_phase, job) =>
      Effect.gen(function* () {
        const row = yield* store.find(job.payload.name)
        if (Option.isNone(row) || row.value.verifyToken !== job.payload.verifyToken) return stop
        const after = yield* check(row.value)
        if (Option.isNone(after) || after.value.status !== "pending_dns") return stop
      })
  })
})
