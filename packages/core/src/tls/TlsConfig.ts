import { Context, Duration, Layer } from "effect"

/** What the API and the jobs know of the edge's certificates (decisions.md part 16); read by the host at start. */
export interface TlsConfigShape {
  /** ACME is on (`SERVICE_ACME_DIRECTORY` set): every active name not covered by the static certificate gets one. */
  readonly acme: boolean
  /** The static certificate's DNS names and expiry, when there is one. */
  readonly staticCertificate: { readonly names: ReadonlyArray<string>; readonly expiresAt: string } | undefined
  /** The first wait after a failed attempt; it doubles up to a day. */
  readonly retryAfter: Duration.Duration
}

/**
 * The edge's certificate settings. A host without an edge (tests, an embedder) provides `TlsConfig.off`: neither ACME
 * nor a static certificate, so every hostname's `tls.status` is `none`.
 */
export class TlsConfig extends Context.Service<TlsConfig, TlsConfigShape>()("@hostplane/core/tls/TlsConfig") {
  static readonly make = (overrides: Partial<TlsConfigShape> = {}) =>
    Layer.succeed(TlsConfig)({
      acme: false,
      staticCertificate: undefined,
      retryAfter: Duration.minutes(1),
      ...overrides
    })

  /** Neither ACME nor a static certificate. */
  static readonly off: Layer.Layer<TlsConfig> = TlsConfig.make()
}
