import { Effect } from "effect"
import type { Simplify } from "effect/Types"
import { FetchHttpClient } from "effect/http"
import type { HttpApiClient, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { type ClientApi, type ClientOptions, errorInfo, HostplaneError, make } from "./HostplaneClient.ts"

type Groups = typeof ClientApi extends { readonly groups: Record<string, infer G> } ? G : never

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

/** The typed client for Promise code: the same groups and methods; a failure rejects with a `HostplaneError`. */
export type PromiseClient = {
  readonly [G in Extract<Groups, { readonly topLevel: false }> as HttpApiGroup.Identifier<G>]: {
    readonly [K in keyof G["endpoints"]]: PromiseMethod<G["endpoints"][K]>
  }
}

/**
 * `makeClient({ baseUrl, token })`: every endpoint as a Promise over `fetch`. A rejection is always a `HostplaneError`
 * carrying the wire `status`, `code`, message and `details` (`code: "unreachable"` when no server answered).
 */
export const makeClient = (options: ClientOptions): PromiseClient => {
  const client = Effect.runSync(make(options).pipe(Effect.provide(FetchHttpClient.layer))) as unknown as Record<
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
  ) as unknown as PromiseClient
}
