import { Duration, Effect, Option, Schema } from "effect"
import { HostnameStore } from "../hostnames/HostnameStore.ts"
import { define, handler, type JobHandler, stop } from "../jobs/Job.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { portOn } from "../kernel/Port.ts"
import { isoPlus, nowIso } from "../kernel/Time.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { AcmeClient } from "./AcmeClient.ts"
import { accountContext, type CertificateRow, keyContext, renewBefore, retryDelay } from "./Certificate.ts"
import { CertificateStore } from "./CertificateStore.ts"
import { nameMatches } from "./EdgeTls.ts"
import { TlsConfig } from "./TlsConfig.ts"

/**
 * One certificate attempt for one hostname (decisions.md part 16): keyed by the name, so at most one order per name
 * is in flight. Its one phase is idempotent: the order URL and the CSR key are stored before the CA is asked to
 * validate, so a job taken over after a crash continues the same order instead of opening another.
 */
export const tlsIssue = define({
  kind: "tls_issue",
  payload: Schema.Struct({ name: Schema.String }),
  phases: ["issue"]
})

/**
 * Every 5 seconds, one runner across the replicas finds the active hostnames that need a certificate (new, due for
 * renewal, or due again after a failure) and starts their `tls_issue` jobs, and drops the certificates of names no
 * longer active: a name becoming active gets its order within seconds, whichever write made it active.
 */
export const tlsSweep = define({
  kind: "tls_sweep",
  payload: Schema.Struct({}),
  phases: ["sweep"],
  every: Duration.seconds(5),
  singleton: { payload: {} }
})

/** The static certificate's cover, and whether ACME runs at all, from the host's `TlsConfig` (`off`: neither). */
const tlsSettings = Effect.map(Effect.service(TlsConfig), (config) => ({
  acme: config.acme,
  patterns: config.staticCertificate?.names ?? [],
  retryAfter: config.retryAfter
}))

export const staticCovers = (patterns: ReadonlyArray<string>, name: string) =>
  patterns.some((pattern) => nameMatches(pattern, name))

export const tlsSweepHandler: Effect.Effect<JobHandler, never, CertificateStore | Jobs | TlsConfig> = Effect.gen(
  function* () {
    const store = yield* CertificateStore
    const jobs = yield* Jobs
    const settings = yield* tlsSettings
    return handler(tlsSweep, {
      run: () =>
        Effect.gen(function* () {
          const removed = yield* store.removeOrphans
          for (const name of removed) yield* Effect.logInfo("certificate dropped", { hostname: name })
          if (!settings.acme) return
          const now = yield* nowIso
          const due = yield* store.due(now, isoPlus(now, renewBefore), 200)
          for (const name of due) {
            if (staticCovers(settings.patterns, name)) continue
            yield* jobs.enqueue(tlsIssue, { name }, { key: name })
          }
        })
    })
  }
)

const fresh = (name: string, at: string): CertificateRow => ({
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
  updatedAt: at
})

export const tlsIssueHandler: Effect.Effect<
  JobHandler,
  never,
  CertificateStore | HostnameStore | Sealer | TlsConfig | AcmeClient
> = Effect.gen(function* () {
  const store = yield* CertificateStore
  const hostnames = yield* HostnameStore
  const sealer = yield* Sealer
  const acme = portOn(yield* AcmeClient)
  const settings = yield* tlsSettings
  const open = (sealed: Parameters<typeof sealer.open>[0], context: string) =>
    Effect.orDie(sealer.open(sealed, context))

  const accountKey = Effect.gen(function* () {
    const existing = yield* store.account
    if (Option.isSome(existing)) return existing.value
    if (Option.isNone(acme)) return yield* Effect.die(new Error("no ACME client"))
    const key = yield* acme.value.newKey
    return yield* store.claimAccount({ key: yield* sealer.seal(key, accountContext), url: null })
  })

  return handler(tlsIssue, {
    run: (_phase, job) =>
      Effect.gen(function* () {
        const name = job.payload.name
        if (Option.isNone(acme) || !settings.acme || staticCovers(settings.patterns, name)) return stop
        const host = yield* hostnames.find(name)
        if (Option.isNone(host) || host.value.status !== "active") {
          yield* store.remove(name)
          return stop
        }
        const now = yield* nowIso
        const before = yield* store.find(name)
        if (Option.isSome(before)) {
          const row = before.value
          if (row.retryAt !== null && row.retryAt > now) return stop
          if (row.status === "issued" && row.expiresAt !== null && row.expiresAt > isoPlus(now, renewBefore)) {
            return stop
          }
        }
        const base = Option.getOrElse(before, () => fresh(name, now))
        const orderKey = base.orderKey ?? (yield* sealer.seal(yield* acme.value.newKey, keyContext(name)))
        let row: CertificateRow = {
          ...base,
          status: base.status === "issued" ? "issued" : "pending",
          orderKey,
          retryAt: null,
          updatedAt: now
        }
        yield* store.put(row)
        const account = yield* accountKey
        const outcome = yield* acme.value
          .order({
            account: { key: yield* open(account.key, accountContext), url: account.url },
            name,
            key: yield* open(orderKey, keyContext(name)),
            orderUrl: row.orderUrl,
            onAccount: (url) => store.setAccountUrl(url),
            onOrder: (url) => {
              row = { ...row, orderUrl: url }
              return store.put(row)
            },
            publish: (token, keyAuthorization) =>
              Effect.flatMap(nowIso, (at) => store.putChallenge(token, keyAuthorization, at)),
            unpublish: (token) => store.removeChallenge(token)
          })
          .pipe(Effect.result)
        const at = yield* nowIso
        if (outcome._tag === "Success") {
          yield* store.put({
            ...row,
            status: "issued",
            chain: outcome.success.chain,
            key: orderKey,
            expiresAt: outcome.success.expiresAt,
            orderUrl: null,
            orderKey: null,
            lastError: null,
            failures: 0,
            retryAt: null,
            updatedAt: at
          })
          yield* Effect.logInfo("certificate issued", { hostname: name, expiresAt: outcome.success.expiresAt })
          return
        }
        const failure = outcome.failure
        const failures = row.failures + 1
        const refused = failure.kind === "refused"
        yield* store.put({
          ...row,
          // A refusal ends the order: the next attempt starts a new one. An unreachable CA keeps it to resume.
          status: refused ? "failed" : row.status,
          orderUrl: refused ? null : row.orderUrl,
          orderKey: refused ? null : row.orderKey,
          lastError: failure.message,
          failures,
          retryAt: isoPlus(at, retryDelay(failures, settings.retryAfter)),
          updatedAt: at
        })
        yield* Effect.logWarning("certificate attempt failed", {
          hostname: name,
          kind: failure.kind,
          error: failure.message
        })
      })
  })
})
