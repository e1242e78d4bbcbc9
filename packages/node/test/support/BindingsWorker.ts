import { manifestEntry } from "@hostplane/testkit"
import { expect } from "vitest"
import { edgeCall, type EdgeReply } from "./RuntimeServer.ts"

/**
 * A worker that reports its `env` and runs any binding call it is asked to: `POST /call` with
 * `{ binding, method, args }` answers `{ value }` or `{ error: { message, code } }` as the worker saw it.
 */
export const bindingsWorker = `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    if (url.pathname === "/env") {
      return Response.json({
        keys: Object.keys(env).sort(),
        db: env.db === undefined ? null : { connectionString: env.db.connectionString, query: typeof env.db.query }
      })
    }
    if (url.pathname === "/call") {
      const { binding, method, args } = await request.json()
      try {
        const value = await env[binding][method](...args)
        return Response.json({ value: value === undefined ? null : value })
      } catch (error) {
        return Response.json({ error: { message: String(error?.message ?? error), code: error?.code ?? null } })
      }
    }
    return new Response("no route", { status: 404 })
  }
}`

export const bindingsBundle = (worker = bindingsWorker, manifest: Record<string, unknown> = {}) => [
  manifestEntry({ name: "app", ...manifest }),
  { name: "worker/index.js", content: worker },
  { name: "assets/index.html", content: "<h1>home</h1>" }
]

/** Runs `env[binding][method](...args)` in the project's worker, through the edge. */
export const callBinding = async (
  edgeUrl: string,
  hostname: string,
  binding: string,
  method: string,
  args: ReadonlyArray<unknown>
): Promise<{ value?: any; error?: { message: string; code: string | null } }> => {
  const reply: EdgeReply = await edgeCall(edgeUrl, hostname, "/call", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ binding, method, args })
  })
  expect(reply.status, reply.text).toBe(200)
  return reply.json()
}

export const envOf = async (edgeUrl: string, hostname: string) => {
  const reply = await edgeCall(edgeUrl, hostname, "/env")
  expect(reply.status, reply.text).toBe(200)
  return reply.json() as { keys: Array<string>; db: { connectionString: string; query: string } | null }
}
