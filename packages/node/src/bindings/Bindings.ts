import type { Deployments, Node } from "@hostplane/core"
import { Effect } from "effect"
import { bindings } from "../areas.ts"
import type { BindingHandler, RawBindingHandler } from "../runtime/WorkerRuntime.ts"
import { answerOf, BindingFailure } from "./Failure.ts"
import type { AnyWorkerBinding, BindingCall, BindingName, ServedBinding } from "./WorkerBinding.ts"

/** A method of a binding's table, never one its prototype lends (a worker names the method). */
const own = <A>(table: Readonly<Record<string, A>> | undefined, method: string): A | undefined =>
  table !== undefined && Object.hasOwn(table, method) ? table[method] : undefined

const asked = new WeakMap<Deployments.Manifest, string>()

/** Which bindings a deployment's manifest asks for, as a key: an env is made again when it changes. */
export const askedBy = (manifest: Deployments.Manifest): string => {
  let known = asked.get(manifest)
  if (known === undefined) {
    known = bindings.map((binding: AnyWorkerBinding) => (binding.wanted?.(manifest) === false ? "0" : "1")).join("")
    asked.set(manifest, known)
  }
  return known
}

/** The loader's name of the module the entry module imports its bindings' modules through. */
const indexModule = "__hostplane_bindings.js"

/**
 * The bindings' worker-side modules as the loader takes them, each read by `source` from `worker/bindings/`, and the
 * index the entry module imports them through (`{ [name]: module }`).
 */
export const bindingModules = (source: (path: string) => string): Record<string, { readonly js: string }> => {
  const modules: Record<string, { readonly js: string }> = {}
  const lines: Array<string> = []
  bindings.forEach((binding: AnyWorkerBinding, index) => {
    const name = `__hostplane_binding_${binding.name}.js`
    modules[name] = { js: source(`bindings/${binding.worker}`) }
    lines.push(`import m${index} from "./${name}"`)
  })
  const entries = bindings.map((binding: AnyWorkerBinding, index) => `${JSON.stringify(binding.name)}: m${index}`)
  modules[indexModule] = { js: `${lines.join("\n")}\nexport default { ${entries.join(", ")} }\n` }
  return modules
}

/**
 * The handlers of the calls a worker's bindings make, each to its binding's method (`ServedBinding`, by name), given
 * its project's state from `stateOf`; a refusal or fault becomes what the worker's promise rejects with.
 */
export const servedHandlers = (
  servedOf: (name: string) => ServedBinding<any> | undefined,
  stateOf: (projectId: string) => Node.NodeProject | undefined
): { readonly handler: BindingHandler; readonly rawHandler: RawBindingHandler } => {
  const callOf = (projectId: string, name: string): BindingCall<any> => ({
    projectId,
    project: stateOf(projectId),
    granted: () => {
      const value = stateOf(projectId)?.bindings[name as BindingName]
      if (value === null || value === undefined) {
        throw new BindingFailure("not_granted", `${name} is not granted to this project`)
      }
      return value
    }
  })

  const handler: BindingHandler = async (projectId, binding, method, args) => {
    try {
      const call = own(servedOf(binding)?.calls, method)
      if (call === undefined) throw new BindingFailure("bad_request", `no binding method ${binding}.${method}`)
      return await call(callOf(projectId, binding), args)
    } catch (error) {
      return answerOf(error)
    }
  }

  const rawHandler: RawBindingHandler = async (projectId, binding, method, query, request, response) => {
    try {
      const raw = own(servedOf(binding)?.raw, method)
      if (raw === undefined) throw new BindingFailure("bad_request", `no streamed binding method ${binding}.${method}`)
      await raw(callOf(projectId, binding), query, request, response)
    } catch (error) {
      request.resume()
      if (response.headersSent) return void response.destroy()
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify(answerOf(error)))
    }
  }

  return { handler, rawHandler }
}

/**
 * The node side of a worker's add-on bindings (decisions.md part 13), folded from the node's list (`src/areas.ts`):
 * what the entry module builds into `env` for a project, and the handler of the calls its bindings make. Every call is
 * checked against the node's converged state at the time of the call, with the project the router loaded the worker
 * for, so a revoked grant fails at once even in an isolate loaded before the revoke, and no call reaches another
 * project's data.
 */
export const makeBindings = Effect.fnUntraced(function* (options: {
  /** The node's converged state of a project. */
  readonly stateOf: (projectId: string) => Node.NodeProject | undefined
  readonly queryTimeoutMs: number
  /** How often the node reports the usage that changed (part 6 wants storage's within 60 s). */
  readonly usageEveryMs?: number
}) {
  /** The bindings this node serves, in the list's order; one it cannot serve is absent from every env. */
  const served = new Map<string, { readonly binding: AnyWorkerBinding; readonly served: ServedBinding<any> }>()
  for (const binding of bindings) {
    const made = yield* binding.make({ queryTimeoutMs: options.queryTimeoutMs, usageEveryMs: options.usageEveryMs })
    if (made !== undefined) served.set(binding.name, { binding, served: made as ServedBinding<any> })
  }

  /** What `env` gets for a project's granted add-ons; an add-on not granted (or not asked for) is absent. */
  const flagsOf = (project: Node.NodeProject, manifest: Deployments.Manifest): Record<string, unknown> => {
    const flags: Record<string, unknown> = {}
    for (const [name, { binding, served: one }] of served) {
      const value = project.bindings[name as BindingName]
      if (value === null || value === undefined) continue
      if (binding.wanted !== undefined && !binding.wanted(manifest)) continue
      flags[name] = one.entry === undefined ? true : one.entry(value)
    }
    return flags
  }

  const { handler, rawHandler } = servedHandlers((name) => served.get(name)?.served, options.stateOf)

  /** A project's new state (or its removal): resources of grants that went are released. */
  const converge = (projectId: string, project: Node.NodeProject | undefined) => {
    for (const [name, { served: one }] of served) {
      one.converge?.(projectId, project?.bindings[name as BindingName] ?? null)
    }
  }

  yield* Effect.addFinalizer(() =>
    Effect.promise(() => Promise.all(Array.from(served.values(), ({ served: one }) => one.close?.())))
  )

  /** The handle a request's worker gets for its end user's session (a binding that reads it, granted, gives one). */
  const userHandle = (projectId: string, session: string | undefined) => {
    const project = options.stateOf(projectId)
    if (project === undefined) return undefined
    for (const { served: one } of served.values()) {
      const handle = one.userHandle?.(projectId, project, session)
      if (handle !== undefined) return handle
    }
    return undefined
  }

  return { flagsOf, handler, rawHandler, converge, userHandle }
})

export type NodeBindings = Effect.Success<ReturnType<typeof makeBindings>>
