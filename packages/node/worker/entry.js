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

const toBytes = async (value) => {
  if (typeof value === "string") return new TextEncoder().encode(value)
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  if (value instanceof Blob) return new Uint8Array(await value.arrayBuffer())
  if (value instanceof ReadableStream) return new Uint8Array(await new Response(value).arrayBuffer())
  if (value === null || value === undefined) return new Uint8Array()
  return new TextEncoder().encode(String(value))
}

const toBase64 = (bytes) => {
  let text = ""
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(text)
}

const fromBase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0))

const storageObject = (meta, base64) => {
  if (meta === null) return null
  const object = { key: meta.key, size: meta.size, etag: meta.etag, uploaded: new Date(meta.uploaded) }
  if (base64 === undefined) return object
  const bytes = fromBase64(base64)
  return {
    ...object,
    body: new Response(bytes).body,
    text: async () => new TextDecoder().decode(bytes),
    json: async () => JSON.parse(new TextDecoder().decode(bytes)),
    arrayBuffer: async () => bytes.slice().buffer
  }
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

const bindingsOf = (flags, request) => {
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
      put: async (key, value) => {
        const answer = await call("storage", "put", [String(key), toBase64(await toBytes(value))])
        return storageObject(answer)
      },
      get: async (key) => {
        const answer = await call("storage", "get", [String(key)])
        return answer === null ? null : storageObject(answer.meta, answer.body)
      },
      head: async (key) => storageObject(await call("storage", "head", [String(key)])),
      delete: async (keys) => {
        await call("storage", "delete", [Array.isArray(keys) ? keys.map(String) : [String(keys)]])
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
    const token = request.headers.get("x-hostplane-user-token")
    env.auth = {
      user: async (asked) => (asked === request && token !== null ? call("auth", "user", [token]) : null)
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
    Object.assign(tenantEnv, bindingsOf(env.__hostplaneBindings ?? {}, request))
    return main.fetch(request, tenantEnv, ctx)
  }
}
