import { expect, it } from "vitest"
import type { CallOptions, Reply, Session, Suite } from "./TestServer.ts"

export type Role = "viewer" | "member" | "admin"

const ladder: ReadonlyArray<Role> = ["viewer", "member", "admin"]

export interface Request {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  readonly path: string
  readonly body?: unknown
}

/** Sends a request the JSON client cannot (a binary upload) for `token`, or without a login when it is left out. */
export type Send = (token: string | undefined) => Promise<Reply>

export interface Operation<F> {
  /** Names the test: `<name>: ...`. */
  readonly name: string
  /** The lowest role that may call it. */
  readonly min: Role
  /** Made once per operation by the org's admin in a fresh org (a project, ...). */
  readonly setup?: (slug: string) => Promise<F>
  /** The request for one caller; called once per caller so a write that consumes its target gets a fresh one. */
  readonly request: (slug: string, fixture: F) => Request | Send | Promise<Request | Send>
  /** The success status; any 2xx when left out. */
  readonly ok?: number
}

/**
 * One test per operation on the enclosing suite's backend: no login 401, an outsider 404 not_found, each role below
 * `min` 403 forbidden, `min` and every role above it succeed. Callers go lowest first, so a success never hides a
 * refusal.
 */
export const itChecksRoles = <F = undefined>(suite: Suite, operation: Operation<F>) =>
  it(`${operation.name}: no login 401, outsider 404, below ${operation.min} 403, ${operation.min} and above succeed`, async () => {
    const slug = await suite.newOrg()
    const fixture = (operation.setup === undefined ? undefined : await operation.setup(slug)) as F
    const send = async (session: Session | undefined): Promise<Reply> => {
      const request = await operation.request(slug, fixture)
      if (typeof request === "function") return request(session?.token)
      const { method, path, body } = request
      const options: CallOptions = session === undefined ? { body } : { body, token: session.token }
      return suite.api.call(method, path, options)
    }
    const described = (who: string, reply: Reply) => ({ who, status: reply.status, code: reply.body?.code })
    expect((await send(undefined)).status).toBe(401)
    expect(described("outsider", await send(suite.outsider))).toEqual({
      who: "outsider",
      status: 404,
      code: "not_found"
    })
    const minimum = ladder.indexOf(operation.min)
    for (const [index, role] of ladder.entries()) {
      const reply = await send(await suite.withRole(slug, role))
      if (index < minimum) expect(described(role, reply)).toEqual({ who: role, status: 403, code: "forbidden" })
      else if (operation.ok !== undefined)
        expect(described(role, reply)).toMatchObject({ who: role, status: operation.ok })
      else
        expect({ who: role, ok: reply.status >= 200 && reply.status < 300, reply: reply.body }).toMatchObject({
          who: role,
          ok: true
        })
    }
  })
