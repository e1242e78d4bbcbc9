import { Identity, type Kernel } from "@hostplane/core"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"

/** What a host's authenticator sees of a request: never its body. */
export interface HostRequest {
  readonly method: string
  /** The path and query under hostplane's mount (`/v1/...`: a prefix the host mounts it under is not part of it). */
  readonly url: string
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>
  readonly cookies: Readonly<Record<string, string>>
}

/** Who the host says the caller is: `provider` and `subject` name one user for good; the profile is refreshed. */
export const HostIdentity = Schema.Struct({
  provider: Schema.NonEmptyString,
  subject: Schema.NonEmptyString,
  email: Schema.optional(Schema.NullOr(Schema.String)),
  name: Schema.optional(Schema.NullOr(Schema.String))
})
export type HostIdentity = typeof HostIdentity.Type

/** The host's authenticator threw, answered something that is not an identity, or did not answer in time. */
export class HostAuthenticatorError extends Schema.TaggedError<HostAuthenticatorError>()("HostAuthenticatorError", {
  reason: Schema.Literals(["failed", "invalid", "timeout"]),
  message: Schema.String
}) {}

/** The wire code of a request the host's authenticator could not decide (503): it names the authenticator. */
export const hostAuthenticatorCode = "host_authenticator_unavailable"

/** The answer to a request whose authenticator failed: 503, the code naming the authenticator, never a user made. */
export const hostAuthenticatorUnavailable = (error: HostAuthenticatorError) =>
  HttpServerResponse.jsonUnsafe(
    { code: hostAuthenticatorCode, message: error.message, details: { reason: error.reason } },
    { status: 503, headers: { "retry-after": "1" } }
  )

/**
 * The host application's own sign-in (decisions.md part 18): a request without hostplane's bearer token is mapped by
 * it to an identity, whose user is created on first sight like an OAuth sign-in. Always provided: the standalone
 * server provides `HostAuthenticator.off`.
 */
export class HostAuthenticator extends Context.Service<
  HostAuthenticator,
  {
    /** False for `off`: requests without a token stay anonymous. */
    readonly enabled: boolean
    /** The caller's identity, or undefined when the host knows no signed-in user behind the request. */
    readonly authenticate: (request: HostRequest) => Effect.Effect<HostIdentity | undefined, HostAuthenticatorError>
  }
>()("@hostplane/http/auth/HostAuthenticator") {
  /** No host sign-in: only hostplane's own tokens authenticate. */
  static readonly off = Layer.succeed(HostAuthenticator, {
    enabled: false,
    authenticate: () => Effect.succeed(undefined)
  })

  /**
   * A host's plain function (sync or async) as the authenticator. It gets `timeout` (default 5 seconds) to answer;
   * a throw, a rejection, a late or malformed answer is a `HostAuthenticatorError` (503), never an anonymous caller.
   */
  static readonly fromFunction = (
    authenticate: (request: HostRequest) => HostIdentity | undefined | null | Promise<HostIdentity | undefined | null>,
    options: { readonly timeout?: Duration.Input } = {}
  ): Layer.Layer<HostAuthenticator> =>
    Layer.succeed(HostAuthenticator, {
      enabled: true,
      authenticate: (request) =>
        Effect.tryPromise({
          try: async () => await authenticate(request),
          catch: (cause) =>
            new HostAuthenticatorError({
              reason: "failed",
              message: `the host's authenticator failed: ${cause instanceof Error ? cause.message : String(cause)}`
            })
        }).pipe(
          Effect.timeoutOrElse({
            duration: options.timeout ?? Duration.seconds(5),
            orElse: () =>
              Effect.fail(
                new HostAuthenticatorError({
                  reason: "timeout",
                  message: "the host's authenticator did not answer in time"
                })
              )
          }),
          Effect.flatMap((answer) =>
            answer === undefined || answer === null
              ? Effect.succeed(undefined)
              : Schema.decodeUnknownEffect(HostIdentity)(answer).pipe(
                  Effect.mapError(
                    () =>
                      new HostAuthenticatorError({
                        reason: "invalid",
                        message: "the host's authenticator answered something that is not { provider, subject }"
                      })
                  )
                )
          )
        )
    })
}

/**
 * The actor a request acts as when it carries no bearer token: resolved lazily (at most once per request) from the
 * host's authenticator, or set by an in-process call. Undefined: nobody is signed in.
 */
export const HostActor = Context.Reference<Effect.Effect<Kernel.Actor | undefined, HostAuthenticatorError>>(
  "@hostplane/http/auth/HostActor",
  { defaultValue: () => anonymous }
)

/** `HostActor`'s value while nothing set it: the request pipeline then asks the host's authenticator. */
export const anonymous: Effect.Effect<Kernel.Actor | undefined, HostAuthenticatorError> = Effect.succeed(undefined)

/**
 * How the request pipeline resolves a request without a token: the host's identity, then its user (created on first
 * sight). Undefined when the authenticator is off.
 */
export const hostActorResolver = Effect.gen(function* () {
  const authenticator = yield* HostAuthenticator
  const identity = yield* Identity.Identity
  if (!authenticator.enabled) return undefined
  return (
    request: HttpServerRequest.HttpServerRequest
  ): Effect.Effect<Kernel.Actor | undefined, HostAuthenticatorError> =>
    Effect.flatMap(
      authenticator.authenticate({
        method: request.method,
        url: request.url,
        headers: request.headers,
        cookies: request.cookies
      }),
      (found) =>
        found === undefined
          ? Effect.succeed(undefined)
          : identity.actorOf({
              provider: found.provider,
              subject: found.subject,
              email: found.email ?? null,
              name: found.name ?? null
            })
    )
})
