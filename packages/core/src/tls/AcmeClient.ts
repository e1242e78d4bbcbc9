import { Context, Effect, Layer, Schema } from "effect"
import { portOff } from "../kernel/Port.ts"

/**
 * Why an attempt ended without a certificate: `refused` carries the CA's problem detail (a bad name, a rate limit, a
 * failed validation); `unreachable` means the CA did not answer, and the attempt is simply made again later.
 */
export class AcmeFailure extends Schema.TaggedError<AcmeFailure>()("AcmeFailure", {
  kind: Schema.Literals(["refused", "unreachable"]),
  message: Schema.String
}) {}

/** One certificate order, with the steps the job persists as it goes. */
export interface AcmeOrderInput {
  /** The account key (PEM) and its URL once registered. */
  readonly account: { readonly key: string; readonly url: string | null }
  readonly name: string
  /** The key (PEM, ECDSA P-256) the CSR is made with. */
  readonly key: string
  /** The order a previous attempt left in flight: continued when the CA still has it pending, ready or valid. */
  readonly orderUrl: string | null
  readonly onAccount: (url: string) => Effect.Effect<void>
  readonly onOrder: (url: string) => Effect.Effect<void>
  /** Publishes an HTTP-01 key authorization for the edge to answer, before the CA is told to validate. */
  readonly publish: (token: string, keyAuthorization: string) => Effect.Effect<void>
  readonly unpublish: (token: string) => Effect.Effect<void>
}

/** The ACME (RFC 8555) client of the certificate jobs, HTTP-01 only. */
export class AcmeClient extends Context.Service<
  AcmeClient,
  {
    /** A new ECDSA P-256 private key as PEM. */
    readonly newKey: Effect.Effect<string>
    /** Registers the account if needed, orders (or resumes the order), validates and downloads the chain. */
    readonly order: (input: AcmeOrderInput) => Effect.Effect<{ chain: string; expiresAt: string }, AcmeFailure>
  }
>()("@hostplane/core/tls/AcmeClient") {
  /** No ACME client: with `TlsConfig.off` no certificate job runs; one that does anyway ends as a defect. */
  static readonly off: Layer.Layer<AcmeClient> = Layer.sync(AcmeClient, () =>
    portOff({
      newKey: Effect.die(new Error("no ACME client")),
      order: () => Effect.die(new Error("no ACME client"))
    })
  )
}
