import { type ClientApi, type ClientOptions } from "./HostplaneClient.ts"
import { makeClientFor, type PromiseClientOf } from "./ClientOf.ts"
import { ClientApi as api } from "./HostplaneClient.ts"

type Groups = typeof ClientApi extends { readonly groups: Record<string, infer G> } ? G : never

/** The typed client for Promise code: the same groups and methods; a failure rejects with a `HostplaneError`. */
export type PromiseClient = PromiseClientOf<Groups>

/**
 * `makeClient({ baseUrl, token })`: every endpoint as a Promise over `fetch`. A rejection is always a `HostplaneError`
 * carrying the wire `status`, `code`, message and `details` (`code: "unreachable"` when no server answered).
 */
export const makeClient = (options: ClientOptions): PromiseClient => makeClientFor(api, options)
