import { Context, Effect, Layer, Option } from "effect"
import { portOff } from "../kernel/Port.ts"

/**
 * What the edge's plain listener needs to know of its TLS listener (decisions.md part 16): the port it answers on and
 * whether a certificate for a name is in hand, so that a plain request for that name is redirected to https. A host
 * without a TLS listener provides `EdgeTls.off`: the plain listener serves every name, and answers no challenge.
 */
export class EdgeTls extends Context.Service<
  EdgeTls,
  {
    /** The TLS listener's port (left out of redirect URLs when it is 443). */
    readonly httpsPort: number
    /** True when the edge holds a certificate for `host`: an issued one, or the static one covering it. */
    readonly covers: (host: string) => boolean
    /** The key authorization answering an HTTP-01 challenge `token`, none when no order of this service made it. */
    readonly challenge: (token: string) => Effect.Effect<Option.Option<string>>
  }
>()("@hostplane/core/tls/EdgeTls") {
  /** No TLS listener: no name is covered, no challenge is ours. */
  static readonly off: Layer.Layer<EdgeTls> = Layer.sync(EdgeTls, () =>
    portOff({ httpsPort: 443, covers: () => false, challenge: () => Effect.succeed(Option.none()) })
  )
}

/** True when `pattern` (a certificate's DNS name, `*.` for one leftmost label) names `host`; both lower-case. */
export const nameMatches = (pattern: string, host: string): boolean => {
  if (pattern === host) return true
  if (!pattern.startsWith("*.")) return false
  const dot = host.indexOf(".")
  return dot > 0 && host.slice(dot + 1) === pattern.slice(2)
}

/** The path prefix of the HTTP-01 challenge (RFC 8555 section 8.3), always answered over plain HTTP. */
export const challengePrefix = "/.well-known/acme-challenge/"

/** A challenge token is base64url (RFC 8555 section 8.1); anything else cannot be one of ours. */
export const isChallengeToken = (token: string): boolean => /^[A-Za-z0-9_-]{1,256}$/.test(token)
