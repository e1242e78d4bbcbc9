import { Errors } from "@hostplane/core"
import { ApiWithDevAuth } from "@hostplane/api/Api"
import { Context, Effect, Layer, Schema } from "effect"
import { HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"

/** The API the client speaks: the server's own definition, dev login included (a server without it answers 404). */
export const ClientApi = ApiWithDevAuth

/**
 * The typed client: one object per API group, one method per endpoint, the server's schemas validating both ways. An
 * interface, so declarations name it instead of spelling out every endpoint, past what the compiler writes (TS7056).
 */
export interface Client extends HttpApiClient.ForApi<typeof ClientApi> {}

export interface ClientOptions {
  /** The server's origin (`http://127.0.0.1:8080`); a trailing `/v1` is accepted. */
  readonly baseUrl: string
  /** A session token or personal access token, sent as `Authorization: Bearer`. */
  readonly token?: string | undefined
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

/** The client over the `HttpClient` in context. */
export const make = (options: ClientOptions): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  HttpApiClient.make(ClientApi, {
    baseUrl: originOf(options.baseUrl),
    transformClient: (client) =>
      options.token === undefined
        ? client
        : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(options.token)),
    transformResponse: envelopeErrors
  }) as Effect.Effect<Client, never, HttpClient.HttpClient>

/** The typed client as a service, for Effect programs: `HostplaneClient.layer({ baseUrl, token })`. */
export class HostplaneClient extends Context.Service<HostplaneClient, Client>()("@hostplane/client/HostplaneClient") {
  static readonly layer = (options: ClientOptions): Layer.Layer<HostplaneClient, never, HttpClient.HttpClient> =>
    Layer.effect(HostplaneClient, make(options))
}
