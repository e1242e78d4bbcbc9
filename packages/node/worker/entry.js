// Runs inside the tenant's isolate, before its code: builds `env` from the capabilities the router passed, and
// answers the deploy check without calling the tenant. Nothing here is trusted: every binding is enforced node-side.
import * as tenant from "__TENANT_ENTRY__"
// Each binding's module by its name in `env`, listed by the node (`src/areas.ts`).
import modules from "./__hostplane_bindings.js"
import { AsyncLocalStorage } from "node:async_hooks"

// Runtime logs: each invocation's console lines and exceptions, kept apart by AsyncLocalStorage and reported to the
// node (through the router's Bindings, so under this worker's own project) by the id the node gave the invocation.
// The node joins them with its own end of the invocation (outcome, status, duration) into one event.
const invocations = new AsyncLocalStorage()
/** decisions.md part 13: at most 256 lines per event, each at most 16 KiB (the node makes the exact UTF-8 cut). */
const maxLogLines = 256
const maxLineChars = 16 * 1024
const jsonOf = (value) => {
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return JSON.stringify(String(value))
  }
}
/**
 * A line's arguments within `maxLineChars` of JSON: kept in order while they fit, the one crossing the bound cut (a
 * string to its first characters, any other value to its JSON text), the rest dropped. Cut here so that a tenant
 * printing megabytes never ships them to the node.
 */
const cutMessage = (texts, args) => {
  const kept = []
  let used = 2
  for (let index = 0; index < texts.length; index++) {
    const separator = kept.length > 0 ? 1 : 0
    if (used + separator + texts[index].length <= maxLineChars) {
      kept.push(texts[index])
      used += separator + texts[index].length
      continue
    }
    const room = maxLineChars - used - separator - 2
    const text = typeof args[index] === "string" ? args[index] : texts[index]
    if (room > 0) kept.push(JSON.stringify(text.slice(0, room)))
    break
  }
  return `[${kept.join(",")}]`
}
const noteLine = (invocation, level, args) => {
  if (invocation.lines.length >= maxLogLines) {
    if (!invocation.full) {
      invocation.full = true
      report(invocation)
    }
    return
  }
  const texts = args.map(jsonOf)
  let message = `[${texts.join(",")}]`
  if (message.length > maxLineChars) {
    message = cutMessage(texts, args)
    invocation.cut = true
  }
  invocation.lines.push(`{"level":"${level}","message":${message},"timestamp":${Date.now()}}`)
  report(invocation)
}
for (const level of ["debug", "info", "log", "warn", "error"]) {
  const original = console[level]
  console[level] = (...args) => {
    const invocation = invocations.getStore()
    if (invocation === undefined) return original.apply(console, args)
    noteLine(invocation, level, args)
  }
}
const noteException = (invocation, error) => {
  invocation.exceptions.push({
    name: String(error?.name ?? "Error"),
    message: String(error?.message ?? error),
    stack: String(error?.stack ?? "")
  })
}
/** Invocations with lines or exceptions not reported yet; one report call per 25 ms. */
const unreported = new Set()
let reporting = false
const report = (invocation) => {
  unreported.add(invocation)
  if (reporting) return
  reporting = true
  const sending = (async () => {
    try {
      await scheduler.wait(25)
      while (unreported.size > 0) {
        const reports = []
        for (const one of unreported) {
          reports.push(
            `{"id":${JSON.stringify(one.id)},"done":${one.done},"truncated":${one.full || one.cut},` +
              `"logs":[${one.lines.slice(one.sentLines).join(",")}],` +
              `"exceptions":${JSON.stringify(one.exceptions.slice(one.sentExceptions))}}`
          )
          one.sentLines = one.lines.length
          one.sentExceptions = one.exceptions.length
        }
        unreported.clear()
        await bindingsStub.logs(`[${reports.join(",")}]`)
      }
    } finally {
      reporting = false
    }
  })()
  try {
    nodeWaitUntil.call(invocation.ctx, sending)
  } catch {
    // The invocation is over: the report goes on under no request's lifetime.
  }
}

/**
 * Tells the node at once that the invocation's handler left work to `ctx.waitUntil`: its event then waits for that
 * work's report (up to the 30 s workerd gives it after the response) instead of the second it waits for an invocation
 * that may print nothing. Sent before the handler answers, so the word is there before the edge's end however late
 * the work's own report comes.
 */
const lingers = (invocation) => {
  invocation.lingers = true
  try {
    nodeWaitUntil.call(
      invocation.ctx,
      bindingsStub
        .logs(`[{"id":${JSON.stringify(invocation.id)},"done":false,"waiting":true,"logs":[],"exceptions":[]}]`)
        .then(undefined, () => undefined)
    )
  } catch {
    // The invocation is over: no word to send under its lifetime.
  }
}

/**
 * The node's part of a request (the invocation's id, the end user's handle) is in `request.cf`, marked
 * `hostplane: 1` by the edge's invoke header or the router. The tenant sees no such `cf`: not on the request it
 * received, nor on a copy of it (workerd copies the fields underneath into `new Request(request)` and `clone()`), as a
 * request it builds itself has none; a copy given a `cf` of its own keeps it. Done once, on the prototype's accessor,
 * so a request costs nothing for it and the tenant's own requests are workerd's.
 */
const NodeRequest = Request
const cfAccessor = Object.getOwnPropertyDescriptor(NodeRequest.prototype, "cf")
const cfOf = cfAccessor.get
Object.defineProperty(NodeRequest.prototype, "cf", {
  ...cfAccessor,
  get() {
    const cf = cfOf.call(this)
    return cf?.hostplane === 1 ? undefined : cf
  }
})

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

/**
 * The granted bindings' settings: an object on the loader shard; on the hot shard, JSON text from the process's
 * environment (it may hold a database password, which is never written into a config file), parsed once.
 */
let flagsText
let flagsParsed
const flagsOf = (value) => {
  if (typeof value !== "string") return value ?? {}
  if (value !== flagsText) {
    flagsParsed = JSON.parse(value)
    flagsText = value
  }
  return flagsParsed
}

/**
 * The env the tenant sees: the worker's own env without the two capabilities that are the entry module's, and with the
 * granted bindings. workerd gives a worker the same `env` object on every request, so the tenant's part is made once
 * per env object and shared, as workerd shares its own; only a project with bindings makes one per request (a binding
 * may read the request it serves: `env.auth.user(request)`).
 */
let lastEnv
let lastTenantEnv
const tenantEnvOf = (env, received, handle) => {
  if (env !== lastEnv) {
    const own = {}
    for (const name of Object.keys(env)) {
      if (name !== "__hostplane" && name !== "__hostplaneBindings") own[name] = env[name]
    }
    lastEnv = env
    lastTenantEnv = own
  }
  const flags = flagsOf(env.__hostplaneBindings)
  for (const _ in flags) return Object.assign({}, lastTenantEnv, bindingsOf(flags, received, handle))
  return lastTenantEnv
}

/** Ends the tenant's handler: its event closes once the work it handed to `ctx.waitUntil` settles too. */
const handlerOver = (invocation) => {
  invocation.handlerOver = true
  settle(invocation)
}
const settle = (invocation) => {
  if (!invocation.handlerOver || invocation.waiting > 0) return
  invocation.done = true
  if (invocation.lines.length > 0 || invocation.exceptions.length > 0) report(invocation)
}
/** A handler that threw: kept with its stack; the edge answers 500 worker_exception, nothing of the error in it. */
const threw = (invocation, error) => {
  noteException(invocation, error)
  handlerOver(invocation)
  return new Response(null, { status: 500, headers: { "x-hostplane-outcome": "exception" } })
}

/**
 * Work the tenant hands to `ctx.waitUntil` belongs to its invocation as it did under workerd's tail: its lines (the
 * store follows the promise) and its rejection are the invocation's, and the event closes when it settles. Wrapped
 * once, on the contexts' prototype (as `request.cf` is), with each context's invocation in a WeakMap: a function set
 * on every request's context cost the hot process more than the rest of the entry module's bookkeeping, and the
 * context keeps workerd's own shape (no property of its own).
 */
const invocationOfContext = new WeakMap()
let nodeWaitUntil
const wrapWaitUntil = (ctx) => {
  let owner = Object.getPrototypeOf(ctx)
  while (!Object.hasOwn(owner, "waitUntil")) owner = Object.getPrototypeOf(owner)
  const descriptor = Object.getOwnPropertyDescriptor(owner, "waitUntil")
  const own = descriptor.value
  Object.defineProperty(owner, "waitUntil", {
    ...descriptor,
    value: function waitUntil(promise) {
      const invocation = invocationOfContext.get(this)
      if (invocation === undefined) return own.call(this, promise)
      if (invocation.waiting++ === 0 && !invocation.lingers) lingers(invocation)
      own.call(
        this,
        Promise.resolve(promise)
          .then(undefined, (error) => void noteException(invocation, error))
          .finally(() => {
            invocation.waiting--
            settle(invocation)
          })
      )
    }
  })
  nodeWaitUntil = own
}

export default {
  fetch(request, env, ctx) {
    // The node's part of the request is in `request.cf`: on the hot shard workerd parses the edge's invoke header
    // into it (the socket's cfBlobHeader) and drops the header; on the loader shard the router puts it there. The edge
    // drops every x-hostplane-* header a client sends, so either is the node's.
    const cf = cfOf.call(request)
    bindingsStub = env.__hostplane
    if (cf === undefined || cf === null) {
      // The hot shard's check that the worker loaded: answered without calling the tenant.
      if (request.headers.get("x-hostplane-check") === "1") return new Response(null, { status: 204 })
      return main.fetch(request, tenantEnvOf(env, request, null), ctx)
    }
    if (cf.check === true) return new Response(null, { status: 204 })
    // The end user's session handle is the node's: the tenant's code never sees it, not even in a copy of the
    // request, so a request that carries one is copied without it (rare: only with a signed-in end user).
    const handle = typeof cf.user === "string" ? cf.user : null
    const received = handle === null ? request : new NodeRequest(request, { cf: { hostplane: 1 } })
    const tenantEnv = tenantEnvOf(env, received, handle)
    if (typeof cf.id !== "string") return main.fetch(received, tenantEnv, ctx)
    if (nodeWaitUntil === undefined) wrapWaitUntil(ctx)
    const invocation = {
      id: cf.id,
      ctx,
      lines: [],
      full: false,
      cut: false,
      exceptions: [],
      done: false,
      handlerOver: false,
      waiting: 0,
      lingers: false,
      sentLines: 0,
      sentExceptions: 0
    }
    invocationOfContext.set(ctx, invocation)
    let result
    try {
      result = invocations.run(invocation, () => main.fetch(received, tenantEnv, ctx))
    } catch (error) {
      return threw(invocation, error)
    }
    // A handler that answers at once is answered at once: no promise of ours in between.
    if (result === null || typeof result !== "object" || typeof result.then !== "function") {
      handlerOver(invocation)
      return result
    }
    return Promise.resolve(result).then(
      (response) => {
        handlerOver(invocation)
        return response
      },
      (error) => threw(invocation, error)
    )
  }
}
