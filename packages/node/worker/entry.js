// Runs inside the tenant's isolate, before its code: builds `env` from the capabilities the router passed, and
// answers the deploy check without calling the tenant. Nothing here is trusted: every binding is enforced node-side.
import * as tenant from "__TENANT_ENTRY__"
// Each binding's module by its name in `env`, listed by the node (`src/areas.ts`).
import modules from "./__hostplane_bindings.js"

const main = tenant.default
if (main === null || typeof main !== "object" || typeof main.fetch !== "function") {
  throw new Error("the worker's entry has no default export with a fetch method")
}

const rejectWith = (failure) => {
  const error = new Error(failure.message)
  if (failure.code !== undefined) error.code = failure.code
  throw error
}

/** The node's answer to a binding call: its value, or a rejection with its error. */
const valueOf = (answer) => {
  if (answer.error !== undefined) rejectWith(answer.error)
  return answer.value
}

let bindingsStub

/**
 * What a binding's module reaches the node through: JSON calls, streamed calls (the body passes through, the node's
 * answer is the response), and the request this invocation received with its end user's handle (null when none).
 */
const nodeOf = (name, request, handle) => ({
  call: async (method, args) => valueOf(await bindingsStub.call(name, method, args)),
  stream: (method, params, body) => {
    const query = Object.entries(params)
      .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
      .join("&")
    return bindingsStub.fetch(
      `http://bindings/${name}/${method}?${query}`,
      body === undefined ? { method: "POST" } : { method: "POST", body }
    )
  },
  valueOf,
  request,
  handle
})

/** The granted bindings, each built by its own module from what the node gave for it. */
const bindingsOf = (flags, request, handle) => {
  const env = {}
  for (const [name, entry] of Object.entries(flags)) {
    const make = modules[name]
    if (make !== undefined) env[name] = make(entry, nodeOf(name, request, handle))
  }
  return env
}

export default {
  async fetch(request, env, ctx) {
    if (request.headers.get("x-hostplane-check") === "1") return new Response(null, { status: 204 })
    bindingsStub = env.__hostplane
    const tenantEnv = {}
    for (const [name, value] of Object.entries(env)) {
      if (name !== "__hostplane" && name !== "__hostplaneBindings") tenantEnv[name] = value
    }
    // The end user's session handle is the node's: the worker's code never sees it among the headers.
    const handle = request.headers.get("x-hostplane-user")
    let received = request
    if (handle !== null) {
      const headers = new Headers(request.headers)
      headers.delete("x-hostplane-user")
      received = new Request(request, { headers })
    }
    Object.assign(tenantEnv, bindingsOf(env.__hostplaneBindings ?? {}, received, handle))
    return main.fetch(received, tenantEnv, ctx)
  }
}
