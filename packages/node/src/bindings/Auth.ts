import { EndUser, Kernel, type Node } from "@hostplane/core"
import { Cause, Context, Effect, Exit, Option } from "effect"
import { randomBytes } from "node:crypto"
import { BindingFailure } from "./Failure.ts"
import { devUserOfCookie } from "../dev/DevSignIn.ts"
import { workerBinding } from "./WorkerBinding.ts"

interface Pending {
  readonly projectId: string
  /** The end user's session cookie as the client sent it; it never leaves the node. */
  readonly session: string
  readonly expires: number
}

/** What `env.auth.user(request)` resolves. */
export interface WorkerUser {
  readonly id: string
  readonly email: string | null
  readonly name: string | null
  readonly provider: string
}

/**
 * How `env.auth.user` resolves a session on a node that does not hold the project databases' sessions: a node on
 * another machine asks the control plane. Unset (the default): the node reads the session in the project's database
 * through `EndUserDirectory`. Fails with a message when the session cannot be looked up now.
 */
export const EndUserLookup = Context.Reference<
  ((projectId: string, session: string) => Effect.Effect<WorkerUser | null, { readonly message: string }>) | undefined
>("@hostplane/node/bindings/EndUserLookup", { defaultValue: () => undefined })

/**
 * `env.auth` (decisions.md part 13): the edge keeps the end user's session cookie of a request (before it strips it)
 * under a random handle that only this request's worker receives, through the router rather than a header a client
 * could set; `user(request)` sends the handle back, and the node resolves the session in the project's database. A
 * handle names its project, so another project's worker cannot use one, and it lapses after `lifetimeMs`.
 */
export const makeAuthBinding = Effect.fnUntraced(function* (options: { readonly lifetimeMs: number }) {
  // `EndUserDirectory.off` is no directory: no session is resolved then.
  const directory = Kernel.portOn(yield* EndUser.EndUserDirectory)
  const lookup = yield* EndUserLookup
  const tokens = yield* Kernel.Tokens
  const pending = new Map<string, Pending>()

  const sweep = () => {
    const now = Date.now()
    for (const [handle, entry] of pending) if (entry.expires < now) pending.delete(handle)
  }
  const timer = setInterval(sweep, 10_000)
  timer.unref()
  yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(timer)))

  /** A handle for this request's session, or undefined when it carries none. */
  const handleFor = (projectId: string, session: string | undefined): string | undefined => {
    if (session === undefined || session === "" || (Option.isNone(directory) && lookup === undefined)) return undefined
    const handle = randomBytes(24).toString("base64url")
    pending.set(handle, { projectId, session, expires: Date.now() + options.lifetimeMs })
    return handle
  }

  const user = async (
    projectId: string,
    project: Node.NodeProject | undefined,
    handle: unknown
  ): Promise<WorkerUser | null> => {
    if (project?.bindings.auth === null || project?.bindings.auth === undefined) {
      throw new BindingFailure("not_granted", "sign-in is not granted to this project")
    }
    if (typeof handle !== "string") return null
    const entry = pending.get(handle)
    if (entry === undefined || entry.projectId !== projectId || entry.expires < Date.now()) return null
    if (lookup !== undefined) {
      const found = await Effect.runPromiseExit(lookup(projectId, entry.session))
      if (Exit.isSuccess(found)) return found.value
      const error = Cause.squash(found.cause)
      throw new BindingFailure(
        "auth_unavailable",
        `the sign-in sessions cannot be read: ${error instanceof Error ? error.message : String((error as { message?: unknown }).message ?? error)}`
      )
    }
    const db = project.bindings.db
    if (db === null || Option.isNone(directory)) return null
    const exit = await Effect.runPromiseExit(
      Effect.gen(function* () {
        const hash = yield* tokens.hash(entry.session)
        return yield* directory.value.session(db, hash, yield* Kernel.nowIso)
      })
    )
    if (Exit.isFailure(exit)) {
      const error = Cause.squash(exit.cause)
      throw new BindingFailure(
        "auth_unavailable",
        `the project's database did not answer: ${error instanceof Error ? error.message : String(error)}`
      )
    }
    const found = exit.value
    if (Option.isNone(found)) return null
    const { id, email, name, provider } = found.value
    return { id, email, name, provider }
  }

  return { handleFor, user }
})

/** `env.auth`: `user(request)`, the end user signed in on the request the worker received. */
export const authBinding = workerBinding({
  name: "auth",
  worker: "auth.js",
  make: (options) =>
    Effect.map(makeAuthBinding({ lifetimeMs: options.queryTimeoutMs + 60_000 }), (auth) => ({
      calls: { user: async (call, args) => ({ value: await auth.user(call.projectId, call.project, args[0]) }) },
      userHandle: (projectId, project, session) =>
        project.bindings.auth === null ? undefined : auth.handleFor(projectId, session)
    })),
  // Under dev the handle is the dev sign-in's own cookie value (`/__service/auth/login/<provider>` of the dev server).
  dev: {
    declared: (manifest) => manifest.auth === true,
    unavailable: "",
    methods: { calls: ["user"] },
    make: () => ({
      calls: {
        user: async (_call, args) => ({
          value: devUserOfCookie(typeof args[0] === "string" ? args[0] : undefined) ?? null
        })
      }
    })
  }
})
