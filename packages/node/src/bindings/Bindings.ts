import { Ai, Database, type Deployments, Email, Kernel, Node, Storage } from "@hostplane/core"
import { Effect, Option } from "effect"
import type { BindingHandler, RawBindingHandler } from "../runtime/WorkerRuntime.ts"
import { makeDbBinding } from "./Db.ts"
import { makeAuthBinding } from "./Auth.ts"
import { answerOf, BindingFailure } from "./Failure.ts"
import { chat, sendMail } from "./Mail.ts"
import { makeStorageBinding } from "./Storage.ts"

/**
 * The node side of a worker's add-on bindings (decisions.md part 13): what the entry module builds into `env` for a
 * project, and the handler of the calls its bindings make. Every call is checked against the node's converged state at
 * the time of the call, with the project the router loaded the worker for, so a revoked grant fails at once even in
 * an isolate loaded before the revoke, and no call reaches another project's data.
 */
export const makeBindings = Effect.fnUntraced(function* (options: {
  /** The node's converged state of a project. */
  readonly stateOf: (projectId: string) => Node.NodeProject | undefined
  readonly queryTimeoutMs: number
  /** How often the node reports the storage usage that changed (part 6 wants it within 60 s). */
  readonly usageEveryMs?: number
}) {
  const db = makeDbBinding({
    authority: (yield* Database.DatabaseNode).authority,
    queryTimeoutMs: options.queryTimeoutMs
  })
  const nodes = yield* Node.Nodes
  const auth = yield* makeAuthBinding({ lifetimeMs: options.queryTimeoutMs + 60_000 })
  const relay = yield* Email.MailRelay
  const gateway = yield* Ai.AiGateway
  // `ObjectStore.off` is no store: the storage binding is then absent.
  const objects = Kernel.portOn(yield* Storage.ObjectStore)
  const storage = Option.map(objects, (store) =>
    makeStorageBinding({
      objects: store,
      report: (items) => Effect.runPromise(Effect.asVoid(nodes.usage({ items }))),
      reportEveryMs: options.usageEveryMs ?? 5_000
    })
  )

  /** What `env` gets for a project's granted add-ons; an add-on not granted is absent. */
  const flagsOf = (project: Node.NodeProject, manifest: Deployments.Manifest): Record<string, unknown> => {
    const flags: Record<string, unknown> = {}
    if (project.bindings.db !== null) flags.db = { connectionString: project.bindings.db.url }
    // Without an object store on this node the grant cannot be served: absent rather than failing every call.
    if (project.bindings.storage !== null && Option.isSome(storage)) flags.storage = true
    if (project.bindings.email !== null) flags.email = true
    // AI needs both the grant and the deployment's `ai: true` (spec 4.10).
    if (project.bindings.ai !== null && manifest.ai === true) flags.ai = true
    if (project.bindings.auth !== null) flags.auth = true
    return flags
  }

  const granted = <K extends keyof Node.NodeProject["bindings"]>(projectId: string, binding: K) => {
    const value = options.stateOf(projectId)?.bindings[binding]
    if (value === null || value === undefined) {
      throw new BindingFailure("not_granted", `${binding} is not granted to this project`)
    }
    return value as NonNullable<Node.NodeProject["bindings"][K]>
  }

  const handler: BindingHandler = async (projectId, binding, method, args) => {
    try {
      if (binding === "db" && method === "query") return await db.query(projectId, granted(projectId, "db"), args)
      if (binding === "storage" && Option.isSome(storage)) {
        return await storage.value.call(projectId, granted(projectId, "storage"), method, args)
      }
      if (binding === "email" && method === "send") {
        return { value: await sendMail(relay, projectId, granted(projectId, "email"), args[0]) }
      }
      if (binding === "ai" && method === "chat") {
        return { value: await chat(gateway, granted(projectId, "ai").key, args[0]) }
      }
      if (binding === "auth" && method === "user") {
        return { value: await auth.user(projectId, options.stateOf(projectId), args[0]) }
      }
      throw new BindingFailure("bad_request", `no binding method ${binding}.${method}`)
    } catch (error) {
      return answerOf(error)
    }
  }

  const rawHandler: RawBindingHandler = async (projectId, binding, method, query, request, response) => {
    try {
      if (binding !== "storage" || Option.isNone(storage)) {
        throw new BindingFailure("bad_request", `no streamed binding method ${binding}.${method}`)
      }
      await storage.value.raw(projectId, granted(projectId, "storage"), method, query.get("key"), request, response)
    } catch (error) {
      request.resume()
      if (response.headersSent) return void response.destroy()
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify(answerOf(error)))
    }
  }

  /** A project's new state (or its removal): resources of grants that went are released. */
  const converge = (projectId: string, project: Node.NodeProject | undefined) => {
    db.converge(projectId, project?.bindings.db ?? null)
    if (Option.isSome(storage)) storage.value.converge(projectId, project?.bindings.storage ?? null)
  }

  yield* Effect.addFinalizer(() =>
    Effect.promise(() => Promise.all([db.close(), Option.isSome(storage) ? storage.value.close() : undefined]))
  )

  /** The handle a request's worker gets for its end user's session (granted sign-in and a session cookie only). */
  const userHandle = (projectId: string, session: string | undefined) =>
    options.stateOf(projectId)?.bindings.auth == null ? undefined : auth.handleFor(projectId, session)

  return { flagsOf, handler, rawHandler, converge, userHandle, openPools: db.openPools }
})

export type NodeBindings = Effect.Success<ReturnType<typeof makeBindings>>
