// The router of one workerd shard (hostplane's own code, trusted): loads each project's worker through the worker
// loader, keyed by project, deployment digest and environment version, and gives it its bindings as capabilities
// whose project comes from the router, never from the tenant. The node reaches this worker over a unix socket only.
import { WorkerEntrypoint } from "cloudflare:workers"

const invokeHeader = "x-hostplane-invoke"

const base64ToBytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0))

/** The tenant's modules as the loader takes them. */
const loaderModules = (modules) => {
  const out = {}
  for (const [name, module] of Object.entries(modules)) {
    if ("js" in module) out[name] = { js: module.js }
    else if ("text" in module) out[name] = { text: module.text }
    else if ("json" in module) out[name] = { json: module.json }
    else if ("wasm" in module) out[name] = { wasm: base64ToBytes(module.wasm).buffer }
  }
  return out
}

/** Asks the node (trusted) for something on behalf of the project named in the props the router set. */
const nodeCall = async (env, projectId, path, body) => {
  const response = await env.NODE.fetch(`http://node${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hostplane-project": projectId },
    body: JSON.stringify(body ?? {})
  })
  return response.json()
}

/** `env.ASSETS`: the deployment's `assets/`, by the edge's asset rules. */
export class Assets extends WorkerEntrypoint {
  async fetch(request) {
    const url = new URL(request.url)
    return this.env.NODE.fetch(
      `http://node/asset?digest=${encodeURIComponent(this.ctx.props.digest)}&path=${encodeURIComponent(url.pathname)}`,
      { method: request.method === "HEAD" ? "HEAD" : "GET" }
    )
  }
}

/** The add-on bindings: every call names the project the router loaded the worker for. */
export class Bindings extends WorkerEntrypoint {
  async call(binding, method, args) {
    return nodeCall(this.env, this.ctx.props.projectId, `/binding/${binding}/${method}`, { args })
  }
  /** The streamed calls (a storage put's value, a get's bytes): the body passes through, never buffered here. */
  async fetch(request) {
    const url = new URL(request.url)
    const headers = new Headers({ "x-hostplane-project": this.ctx.props.projectId })
    const length = request.headers.get("content-length")
    if (length !== null) headers.set("content-length", length)
    return this.env.NODE.fetch(`http://node/raw${url.pathname}${url.search}`, {
      method: "POST",
      headers,
      body: request.body
    })
  }
  /** The entry module's reports (console lines and exceptions by invocation id), as JSON text. */
  async logs(text) {
    await this.env.NODE.fetch("http://node/logs", {
      method: "POST",
      headers: { "content-type": "application/json", "x-hostplane-project": this.ctx.props.projectId },
      body: text
    })
  }
}

/**
 * The worker of an invocation: kept warm by key. A load check's worker is loaded once and dropped after it: kept, every
 * deploy would hold a whole isolate (about 2 MB) for good.
 */
const load = async (env, ctx, meta) =>
  meta.check === true
    ? env.LOADER.load(await codeOf(env, ctx, meta))
    : env.LOADER.get(meta.key, () => codeOf(env, ctx, meta))

const codeOf = async (env, ctx, meta) => {
  const response = await env.NODE.fetch(`http://node/code?key=${encodeURIComponent(meta.key)}`)
  if (!response.ok) throw new Error(`the node has no code for ${meta.key}: ${response.status}`)
  const code = await response.json()
  const props = { projectId: code.projectId, deploymentId: code.deploymentId, digest: code.digest }
  return {
    compatibilityDate: code.compatibilityDate,
    // The entry module keeps each invocation's console lines apart with AsyncLocalStorage.
    compatibilityFlags: code.compatibilityFlags.some((flag) =>
      ["nodejs_als", "nodejs_compat", "nodejs_compat_v2"].includes(flag)
    )
      ? code.compatibilityFlags
      : [...code.compatibilityFlags, "nodejs_als"],
    mainModule: code.mainModule,
    modules: loaderModules(code.modules),
    env: {
      ...code.secrets,
      ASSETS: ctx.exports.Assets({ props }),
      __hostplane: ctx.exports.Bindings({ props }),
      __hostplaneBindings: code.bindings
    },
    globalOutbound: code.outbound === "public" ? env.INTERNET : null
  }
}

const describe = (error) => ({
  name: String(error?.name ?? "Error"),
  message: String(error?.message ?? error),
  stack: String(error?.stack ?? "")
})

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url)
    if (url.pathname === "/__hostplane/health") return new Response("ok")
    const header = request.headers.get(invokeHeader)
    if (header === null) return new Response("not an invocation", { status: 400 })
    const meta = JSON.parse(header)
    const headers = new Headers(request.headers)
    headers.delete(invokeHeader)
    const hasBody = request.method !== "GET" && request.method !== "HEAD"
    // The invocation's part for the entry module goes in `cf`, which only the node's invoke header fills: the id the
    // node joins the entry module's log reports to, the end user's session handle, whether this is a load check. Its
    // mark hides it from the tenant (the entry module's `cf` accessor).
    const forwarded = new Request(meta.url, {
      method: request.method,
      headers,
      body: hasBody ? request.body : null,
      redirect: "manual",
      cf: {
        hostplane: 1,
        ...(typeof meta.id === "string" ? { id: meta.id } : {}),
        ...(typeof meta.user === "string" ? { user: meta.user } : {}),
        ...(meta.check === true ? { check: true } : {})
      }
    })
    try {
      const worker = await load(env, ctx, meta)
      return await worker.getEntrypoint().fetch(forwarded)
    } catch (error) {
      // workerd cancels a handler that waits on nothing that could ever settle: that worker never answers (a 504),
      // it did not throw.
      const hung = /had hung and would never generate a response/.test(String(error?.message ?? ""))
      return new Response(JSON.stringify(describe(error)), {
        status: 500,
        headers: { "content-type": "application/json", "x-hostplane-outcome": hung ? "hung" : "exception" }
      })
    }
  }
}
