import { HostplaneError, makeClientFor, type PromiseClientOf } from "@hostplane/client/ClientOf"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { base } from "./router.tsx"
import { forgetSession, readSession } from "./session.ts"

/** Called when the API answers 401: the console forgets the session and shows sign-in on the same page. */
let onSignedOut: () => void = () => {}
export const whenSignedOut = (callback: () => void) => {
  onSignedOut = callback
}

const signOutOn401 = (error: unknown): never => {
  if (error instanceof HostplaneError && error.status === 401) {
    forgetSession()
    onSignedOut()
  }
  throw error
}

const guarded = <C>(client: C): C =>
  Object.fromEntries(
    Object.entries(client as Record<string, Record<string, (request: unknown) => Promise<unknown>>>).map(
      ([group, methods]) => [
        group,
        Object.fromEntries(
          Object.entries(methods).map(([name, method]) => [
            name,
            (request: unknown) => method(request).catch(signOutOn401)
          ])
        )
      ]
    )
  ) as C

/**
 * The typed client of just the groups a page uses, from `@hostplane/api`'s own definitions: a page loads only the
 * schemas it needs (the whole API is above the console's 200 KiB budget). The session's token goes with every call.
 */
export const clientOf = <const Groups extends NonEmptyReadonlyArray<HttpApiGroup.Constraint>>(...groups: Groups) => {
  const api = HttpApi.make("hostplane")
    .add(...(groups as unknown as NonEmptyReadonlyArray<Groups[number]>))
    .prefix("/v1")
  return (): PromiseClientOf<Groups[number]> =>
    guarded(makeClientFor(api, { baseUrl: `${location.origin}${base}`, token: readSession()?.token }) as never)
}

/** What a failed call shows where the action was taken: the API's message and code. */
export interface Problem {
  readonly message: string
  readonly code: string
}

export const problemOf = (error: unknown): Problem =>
  error instanceof HostplaneError
    ? { message: error.message, code: error.code }
    : { message: error instanceof Error ? error.message : String(error), code: "client_error" }
