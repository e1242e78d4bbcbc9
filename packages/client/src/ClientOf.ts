import { Errors } from "@hostplane/core"
import { Effect, Schema } from "effect"
import type { Simplify } from "effect/Types"
import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import { type HttpApi, HttpApiClient, type HttpApiEndpoint, type HttpApiGroup } from "effect/http-api"

export interface ClientOptions {
  /** The server's origin (`http://127.0.0.1:8080`); a trailing `/v1` is accepted. */
  readonly baseUrl: string
  /** A session token or personal access token, sent as `Authorization: Bearer`. */
  readonly token?: string | undefined
  /** The `fetch` requests go through instead of the global one (an embedding host's in-process handler, a test's). */
  readonly fetch?: typeof globalThis.fetch | undefined
}

/**
 * An error envelope `{ code, message, details }` the endpoint does not declare (a route this server lacks, a 500 with
 * its request id, a 415...), or a reply that is not an envelope at all. Declared failures arrive as core's own tagged
 * errors (`Errors.NotFound`, ...); `errorInfo` gives the `code` of either kind.
 */
export class HostplaneError extends Schema.TaggedError<HostplaneError>()("HostplaneError", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String,
  details: Schema.optionalKey(Errors.Details)
}) {}

const codeByTag = new Map<string, string>(Errors.all.map((error) => [new error({ message: "" })._tag, error.code]))

/** What any failure of a client call means on the wire: the status and `code` clients branch on, and the message. */
export interface ErrorInfo {
  readonly status: number | undefined
  readonly code: string
  readonly message: string
  readonly details?: Errors.Details | undefined
}

/**
 * The `code` and message of a failure from a client call: a core error (its table code), a `HostplaneError`, or a
 * transport failure (`unreachable`: no server answered).
 */
export const errorInfo = (error: unknown): ErrorInfo => {
  if (error instanceof HostplaneError) {
    return { status: error.status, code: error.code, message: error.message, details: error.details }
  }
  if (HttpClientError.isHttpClientError(error)) {
    if (error.reason._tag === "TransportError") {
      return { status: undefined, code: "unreachable", message: `no answer from ${error.request.url}` }
    }
    return { status: error.response?.status, code: "bad_response", message: error.message }
  }
  if (typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string") {
    const code = codeByTag.get(error._tag)
    if (code !== undefined) {
      const details = "details" in error ? (error.details as Errors.Details | undefined) : undefined
      const message = "message" in error ? String(error.message) : code
      return { status: Errors.statusOf(code as Errors.ErrorCode), code, message, details }
    }
  }
  return { status: undefined, code: "client_error", message: error instanceof Error ? error.message : String(error) }
}

const Envelope = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  details: Schema.optionalKey(Errors.Details)
})

/** A reply the endpoint's schemas could not take (undeclared status or code) becomes a `HostplaneError`. */
const envelopeErrors = (effect: Effect.Effect<unknown, unknown, unknown>) =>
  Effect.catchIf(
    effect,
    (error): error is HttpClientError.HttpClientError =>
      HttpClientError.isHttpClientError(error) && error.response !== undefined && error.response.status >= 400,
    (error) => {
      const response = error.response!
      return response.json.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Envelope)),
        Effect.orElseSucceed(() => ({
          code: `http_${response.status}`,
          message: `the server answered ${response.status} without an error envelope`
        })),
        Effect.flatMap((envelope) => Effect.fail(new HostplaneError({ status: response.status, ...envelope })))
      )
    }
  )

const originOf = (baseUrl: string) => baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "")

/**
 * The typed client of any API made of `@hostplane/api` groups (a page that needs three groups loads only their
 * schemas), over the `HttpClient` in context; `make` is this over the whole API.
 */
export const makeFor = <ApiId extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<ApiId, Groups>,
  options: ClientOptions
): Effect.Effect<HttpApiClient.Client<Groups, never, never>, never, HttpClient.HttpClient> =>
  HttpApiClient.make(api, {
    baseUrl: originOf(options.baseUrl),
    transformClient: (client) => {
      const own = options.fetch
      const fetched =
        own === undefined
          ? client
          : HttpClient.transform(client, (effect) => Effect.provideService(effect, FetchHttpClient.Fetch, own))
      return options.token === undefined
        ? fetched
        : HttpClient.mapRequest(fetched, HttpClientRequest.bearerToken(options.token))
    },
    transformResponse: envelopeErrors
  }) as never

type PromiseMethod<Endpoint> = Endpoint extends HttpApiEndpoint.ConstraintRequest
  ? (
      request: Simplify<
        HttpApiEndpoint.ClientRequest<
          Endpoint["~Params"],
          Endpoint["~Query"],
          Endpoint["~Payload"],
          Endpoint["~Headers"],
          "decoded-only"
        >
      >
    ) => Promise<HttpApiClient.SuccessType<Endpoint["~Success"]>>
  : never

/** The Promise client of the groups `Groups`: one object per group, one method per endpoint. */
export type PromiseClientOf<Groups extends HttpApiGroup.Constraint> = {
  readonly [G in Extract<Groups, { readonly topLevel: false }> as HttpApiGroup.Identifier<G>]: {
    readonly [K in keyof G["endpoints"]]: PromiseMethod<G["endpoints"][K]>
  }
}

/**
 * Every endpoint of `api` as a Promise over `fetch`. A rejection is always a `HostplaneError` carrying the wire
 * `status`, `code`, message and `details` (`code: "unreachable"` when no server answered).
 */
export const makeClientFor = <ApiId extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<ApiId, Groups>,
  options: ClientOptions
): PromiseClientOf<Groups> => {
  const client = Effect.runSync(makeFor(api, options).pipe(Effect.provide(FetchHttpClient.layer))) as unknown as Record<
    string,
    Record<string, (request: unknown) => Effect.Effect<unknown, unknown>>
  >
  const run = (call: Effect.Effect<unknown, unknown>) =>
    Effect.runPromise(
      call.pipe(
        Effect.mapError((error) => {
          const info = errorInfo(error)
          return new HostplaneError({
            status: info.status ?? 0,
            code: info.code,
            message: info.message,
            ...(info.details === undefined ? {} : { details: info.details })
          })
        }),
        Effect.provide(FetchHttpClient.layer)
      )
    )
  return Object.fromEntries(
    Object.entries(client).map(([group, methods]) => [
      group,
      Object.fromEntries(
        Object.entries(methods).map(([name, method]) => [name, (request: unknown) => run(method(request))])
      )
    ])
  ) as unknown as PromiseClientOf<Groups>
}
