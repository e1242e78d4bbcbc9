import { Tls } from "@hostplane/core"
import type * as acme from "acme-client"
import { Config, Effect, Layer, Option } from "effect"
import { X509Certificate } from "node:crypto"
import { readFileSync } from "node:fs"
import { Agent } from "node:https"
import { rootCertificates } from "node:tls"

/** What the client needs: the CA's directory URL, the account contact, extra roots for the CA's own HTTPS. */
export interface AcmeOptions {
  readonly directoryUrl: string
  readonly email: string | undefined
  /** PEM roots trusted for the ACME server's HTTPS besides the system's (a test CA such as Pebble). */
  readonly caPem: string | undefined
}

/** True when `error` came from the transport (no answer, or the CA's server failing), not from a CA's decision. */
const unreachable = (error: unknown): boolean => {
  const axios = error as { isAxiosError?: boolean; response?: { status?: number } }
  if (axios.isAxiosError !== true) return false
  const status = axios.response?.status
  return status === undefined || status >= 500
}

const failureOf = (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  return unreachable(error)
    ? new Tls.AcmeFailure({ kind: "unreachable", message: `the ACME server could not be reached: ${message}` })
    : new Tls.AcmeFailure({ kind: "refused", message })
}

/**
 * Why a refused authorization was refused: the library reports an invalid authorization as the whole object in JSON,
 * while the CA's problem detail is on its http-01 challenge, so the authorization is read again for it.
 */
const challengeProblem = (client: acme.Client, order: acme.Order, url: string, failure: Tls.AcmeFailure) =>
  Effect.tryPromise(() => client.getAuthorizations(order)).pipe(
    Effect.map((authorizations) => {
      const challenge = authorizations
        .find((authorization) => authorization.url === url)
        ?.challenges.find((offered) => offered.type === "http-01")
      const detail = (challenge?.error as { detail?: unknown } | undefined)?.detail
      return typeof detail === "string" ? new Tls.AcmeFailure({ kind: "refused", message: detail }) : failure
    }),
    Effect.orElseSucceed(() => failure)
  )

/**
 * `AcmeClient` through `acme-client` (the maintained RFC 8555 client for Node): HTTP-01 only, ECDSA P-256 keys. The
 * library's own retries of unanswered requests are cut to one, so an unreachable CA ends the attempt quickly and the
 * job's backoff decides when to try again.
 */
export const make = (options: AcmeOptions): Tls.AcmeClient["Service"] => {
  // Loaded at the first call, not with the server: a server without ACME never needs the library, and it takes about
  // 9 MiB of heap with what it imports (axios, X.509 and ASN.1 parsers).
  let loaded: Promise<typeof acme> | undefined
  const library = () =>
    (loaded ??= import("acme-client").then((lib) => {
      // `acmeSettings` is the library's own field on its axios instance, not in axios's types.
      const defaults = lib.axios.defaults as typeof lib.axios.defaults & { acmeSettings: Record<string, number> }
      defaults.acmeSettings = { ...defaults.acmeSettings, retryMaxAttempts: 1, retryDefaultDelay: 1 }
      lib.axios.defaults.timeout = 30_000
      if (options.caPem !== undefined) {
        lib.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, options.caPem] })
      }
      return lib
    }))
  const newKey = Effect.promise(() => library().then((lib) => lib.crypto.createPrivateEcdsaKey("P-256"))).pipe(
    Effect.map((key) => key.toString())
  )
  const order = (input: Tls.AcmeOrderInput) =>
    Effect.gen(function* () {
      const run = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: failureOf })
      const lib = yield* Effect.promise(library)
      const client = new lib.Client({
        directoryUrl: options.directoryUrl,
        accountKey: input.account.key,
        ...(input.account.url === null ? {} : { accountUrl: input.account.url }),
        backoffAttempts: 10,
        backoffMin: 1_000,
        backoffMax: 10_000
      })
      if (input.account.url === null) {
        yield* run(() =>
          client.createAccount({
            termsOfServiceAgreed: true,
            ...(options.email === undefined ? {} : { contact: [`mailto:${options.email}`] })
          })
        )
        yield* input.onAccount(client.getAccountUrl())
      }
      // The order a crashed attempt left is continued while the CA still has it; an invalid one is replaced.
      let current: acme.Order | undefined
      if (input.orderUrl !== null) {
        const url = input.orderUrl
        const found = yield* run(() => client.getOrder({ url } as acme.Order)).pipe(Effect.option)
        if (Option.isSome(found) && found.value.status !== "invalid") current = found.value
      }
      if (current === undefined) {
        current = yield* run(() => client.createOrder({ identifiers: [{ type: "dns", value: input.name }] }))
        yield* input.onOrder(current.url)
      }
      let placed: acme.Order = current
      if (placed.status === "pending") {
        const authorizations = yield* run(() => client.getAuthorizations(placed))
        for (const authorization of authorizations) {
          if (authorization.status === "valid") continue
          const challenge = authorization.challenges.find((offered) => offered.type === "http-01")
          if (challenge === undefined) {
            return yield* new Tls.AcmeFailure({ kind: "refused", message: "the CA offered no http-01 challenge" })
          }
          const keyAuthorization = yield* run(() => client.getChallengeKeyAuthorization(challenge))
          yield* input.publish(challenge.token, keyAuthorization)
          yield* Effect.gen(function* () {
            if (challenge.status === "pending") yield* run(() => client.completeChallenge(challenge))
            yield* run(() => client.waitForValidStatus(authorization)).pipe(
              Effect.catchIf(
                (failure) => failure.kind === "refused",
                (failure) => Effect.flatMap(challengeProblem(client, placed, authorization.url, failure), Effect.fail)
              )
            )
          }).pipe(Effect.ensuring(input.unpublish(challenge.token)))
        }
        placed = yield* run(() => client.getOrder(placed))
      }
      if (placed.status === "ready") {
        const [, csr] = yield* run(() =>
          lib.crypto.createCsr({ commonName: input.name, altNames: [input.name] }, input.key)
        )
        placed = yield* run(() => client.finalizeOrder(placed, csr))
      }
      if (placed.status !== "valid") placed = yield* run(() => client.waitForValidStatus(placed))
      const chain = yield* run(() => client.getCertificate(placed))
      const leaf = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(chain)?.[0]
      if (leaf === undefined)
        return yield* new Tls.AcmeFailure({ kind: "refused", message: "the CA sent no certificate" })
      return { chain, expiresAt: new Date(new X509Certificate(leaf).validTo).toISOString() }
    })
  return Tls.AcmeClient.of({ newKey, order })
}

/** `SERVICE_ACME_DIRECTORY`, `SERVICE_ACME_EMAIL`, `SERVICE_ACME_CA_FILE`: the options, none when no directory is set. */
export const optionsConfig = Effect.gen(function* () {
  const directory = yield* Config.option(Config.String("SERVICE_ACME_DIRECTORY"))
  const email = yield* Config.option(Config.String("SERVICE_ACME_EMAIL"))
  const caFile = yield* Config.option(Config.String("SERVICE_ACME_CA_FILE"))
  const set = (value: Option.Option<string>) => Option.filter(value, (text) => text.trim() !== "")
  if (Option.isNone(set(directory))) return Option.none<AcmeOptions>()
  const ca = set(caFile)
  return Option.some<AcmeOptions>({
    directoryUrl: Option.getOrThrow(directory).trim(),
    email: Option.getOrUndefined(set(email)),
    caPem: Option.isSome(ca) ? readFileSync(ca.value.trim(), "utf8") : undefined
  })
})

/** The client from the settings; without `SERVICE_ACME_DIRECTORY` it is present but never called (ACME is off). */
export const layerConfig = Layer.effect(
  Tls.AcmeClient,
  Effect.map(optionsConfig, (options) =>
    make(Option.getOrElse(options, () => ({ directoryUrl: "", email: undefined, caPem: undefined })))
  )
)
