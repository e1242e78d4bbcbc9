// Runs inside the tenant's isolate, before its code: builds `env` from the capabilities the router passed, and
// answers the deploy check without calling the tenant. Nothing here is trusted: every binding is enforced node-side.
import * as tenant from "__TENANT_ENTRY__"

const main = tenant.default
if (main === null || typeof main !== "object" || typeof main.fetch !== "function") {
  throw new Error("the worker's entry has no default export with a fetch method")
}

const rejectWith = (failure) => {
  const error = new Error(failure.message)
  if (failure.code !== undefined) error.code = failure.code
  throw error
}

const call = async (binding, method, args) => {
  const answer = await bindingsStub.call(binding, method, args)
  if (answer.error !== undefined) rejectWith(answer.error)
  return answer.value
}

let bindingsStub

/** An R2-like object from the node's metadata; with a response, its body too (read once, as R2's is). */
const storageObject = (meta, response) => {
  if (meta === null) return null
  const object = { key: meta.key, size: meta.size, etag: meta.etag, uploaded: new Date(meta.uploaded) }
  if (response === undefined) return object
  return {
    ...object,
    body: response.body,
    get bodyUsed() {
      return response.bodyUsed
    },
    text: () => response.text(),
    json: () => response.json(),
    arrayBuffer: () => response.arrayBuffer(),
    blob: () => response.blob()
  }
}

const keyOf = (key) => {
  if (typeof key !== "string") throw new TypeError("invalid_key: a key is a string")
  return key
}

/** A storage call whose body streams; answers the node's JSON answer, or the response itself when it holds bytes. */
const streamed = async (method, key, body) => {
  const response = await bindingsStub.fetch(
    `http://bindings/storage/${method}?key=${encodeURIComponent(keyOf(key))}`,
    body === undefined ? { method: "POST" } : { method: "POST", body }
  )
  const meta = response.headers.get("x-hostplane-object")
  if (meta !== null) return { meta: JSON.parse(decodeURIComponent(meta)), response }
  const answer = await response.json()
  if (answer.error !== undefined) rejectWith(answer.error)
  return { meta: answer.value }
}

const storageBody = (value) => {
  if (value === null || value === undefined) return ""
  if (
    typeof value === "string" ||
    value instanceof ArrayBuffer ||
    ArrayBuffer.isView(value) ||
    value instanceof Blob ||
    value instanceof ReadableStream
  )
    return value
  throw new TypeError("bad_request: a value is a string, ArrayBuffer, typed array, Blob or ReadableStream")
}

/** A query parameter as the text PostgreSQL reads: dates in ISO form, bytes as `bytea` hex, objects as JSON. */
const paramText = (value) => {
  if (value === null || value === undefined) return null
  if (value instanceof Date) return value.toISOString()
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    const bytes =
      value instanceof ArrayBuffer
        ? new Uint8Array(value)
        : new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
    return "\\x" + Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("")
  }
  if (typeof value === "object") return JSON.stringify(value)
  return String(value)
}

const bindingsOf = (flags, request, handle) => {
  const env = {}
  if (flags.db) {
    env.db = {
      connectionString: flags.db.connectionString,
      query: (text, params) =>
        call("db", "query", [text, Array.isArray(params) ? params.map(paramText) : params === undefined ? [] : params])
    }
  }
  if (flags.storage) {
    env.storage = {
      put: async (key, value) => storageObject((await streamed("put", key, storageBody(value))).meta),
      get: async (key) => {
        const { meta, response } = await streamed("get", key)
        return meta === null ? null : storageObject(meta, response)
      },
      head: async (key) => storageObject(await call("storage", "head", [keyOf(key)])),
      delete: async (keys) => {
        await call("storage", "delete", [Array.isArray(keys) ? keys : [keys]])
      },
      list: async (options) => {
        const answer = await call("storage", "list", [options ?? {}])
        return { ...answer, objects: answer.objects.map((meta) => storageObject(meta)) }
      }
    }
  }
  if (flags.email) {
    env.email = {
      send: (message) => call("email", "send", [typeof message === "string" ? { raw: message } : message])
    }
  }
  if (flags.ai) {
    env.ai = { chat: (body) => call("ai", "chat", [body]) }
  }
  if (flags.auth) {
    env.auth = {
      // Only the request this invocation received carries its user; one the worker built resolves null.
      user: async (asked) => (asked === request && handle !== null ? call("auth", "user", [handle]) : null)
    }
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
    // The session handle is the node's, for env.auth: the worker's code never sees it among the headers.
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
