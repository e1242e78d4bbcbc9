import { ApiWithDevAuth } from "@hostplane/api/Api"
import { Context, type Effect, Layer } from "effect"
import type { HttpClient } from "effect/http"
import type { HttpApiClient } from "effect/http-api"
import { type ClientOptions, makeFor } from "./ClientOf.ts"

export { type ClientOptions, errorInfo, type ErrorInfo, HostplaneError } from "./ClientOf.ts"

/** The API the client speaks: the server's own definition, dev login included (a server without it answers 404). */
export const ClientApi = ApiWithDevAuth

/** The typed client: one object per API group, one method per endpoint, the server's schemas validating both ways. */
export interface Client extends HttpApiClient.ForApi<typeof ClientApi> {}

/** The client over the `HttpClient` in context. */
export const make = (options: ClientOptions): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  makeFor(ClientApi, options) as Effect.Effect<Client, never, HttpClient.HttpClient>

/** The typed client as a service, for Effect programs: `HostplaneClient.layer({ baseUrl, token })`. */
/** The service's shape, named so declaration files refer to it instead of writing the whole client type out again. */
export interface HostplaneClientShape extends Client {}

export class HostplaneClient extends Context.Service<HostplaneClient, HostplaneClientShape>()(
  "@hostplane/client/HostplaneClient"
) {
  static readonly layer = (options: ClientOptions): Layer.Layer<HostplaneClient, never, HttpClient.HttpClient> =>
    Layer.effect(HostplaneClient, make(options))
}
