import { Ai, Database, Deployments, Email, Errors, Kernel, Node } from "@hostplane/core"
import type { HostnameRoute } from "@hostplane/core/hostnames/Hostname"
import type { OrgId, ProjectId } from "@hostplane/core/kernel/Ids"
import { Context, Effect, Layer, Option, Redacted, Result, Schedule, Semaphore, Stream } from "effect"
import { AccessUnavailable, EdgeAccess, type EdgeAnswer, EdgeSignIn, passAnswer } from "../edge/Edge.ts"
import { authFlowCookie, authSessionCookie } from "../enduser/AuthWorker.ts"
import { EndUserLookup } from "../bindings/Auth.ts"
import { DatabaseAuthorityReread } from "../bindings/Db.ts"
import { InvocationEvents } from "../runtime/WorkerInvokerLive.ts"
import { EdgeView, type LiveDeployment, makeFileHold, type ProjectView } from "../edge/EdgeCache.ts"
import type { NodeApiOptions } from "./ArtifactStoreNodeApi.ts"
import { makeNodeApiClient, type NodeApiClient, NodeApiError } from "./NodeApiClient.ts"

/** How often a remote node reads the node state for changes (a deploy serves on it within about this long). */
export const remoteStatePoll = 500

/**
 * The node state as a node on another machine holds it: every project the control plane names, converged by reading
 * `GET /v1/node/state?after=<revision>` every `remoteStatePoll`. `generation` rises with every change read, so what
 * the edge worked out from an older generation is worked out again.
 */
export class RemoteState extends Context.Service<
  RemoteState,
  {
    readonly client: NodeApiClient
    /** The node token this node holds. */
    readonly token: Redacted.Redacted<string>
    /** The project as last read; undefined when the control plane names none with this id (or not yet). */
    readonly project: (projectId: string) => Node.NodeProject | undefined
    /** The project an active hostname (lowercase, without a port) routes to. */
    readonly projectOfHost: (host: string) => Node.NodeProject | undefined
    /** Rises with every change read; undefined until the state was first read. */
    readonly generation: () => number | undefined
    /** Reads the changes since the last read now (and waits for a read already running). */
    readonly refresh: Effect.Effect<void, NodeApiError>
    /**
     * The node state's answer (decisions.md part 6) from what this reader holds: every project read at a revision
     * after `after`, removed ones included, and the revision read last. The worker runtime converges on this instead
     * of reading the control plane itself, so the node has one reader of the state.
     */
    readonly changesAfter: (after: number) => Node.NodeState
  }
>()("@hostplane/node/remote/RemoteState") {
  static readonly layer = (options: NodeApiOptions & { readonly pollMs?: number }) =>
    Layer.effect(
      RemoteState,
      Effect.gen(function* () {
        const client = makeNodeApiClient(options)
        const projects = new Map<string, Node.NodeProject>()
        // Each project as last read, removed ones too, with the revision of the page it came in: a page's revision is
        // at or after each of its projects' own, so an `after` below it never misses one.
        const read = new Map<string, { readonly project: Node.NodeProject; readonly at: number }>()
        const hosts = new Map<string, string>()
        let revision = 0
        let generation: number | undefined
        const lock = Semaphore.makeUnsafe(1)

        const apply = (project: Node.NodeProject) => {
          const before = projects.get(project.projectId)
          for (const host of before?.hostnames ?? []) {
            if (hosts.get(host) === project.projectId) hosts.delete(host)
          }
          if (project.removed) {
            projects.delete(project.projectId)
            return
          }
          projects.set(project.projectId, project)
          for (const host of project.hostnames) hosts.set(Kernel.canonicalHost(host), project.projectId)
        }

        const refresh = lock.withPermits(1)(
          Effect.gen(function* () {
            for (;;) {
              const page = yield* client.state(revision)
              for (const project of page.projects) {
                apply(project)
                read.set(project.projectId, { project, at: page.revision })
              }
              if (page.projects.length > 0 || generation === undefined) generation = (generation ?? 0) + 1
              const moved = page.revision !== revision
              revision = page.revision
              if (!moved || page.projects.length === 0) return
            }
          })
        )

        let failing = false
        yield* Effect.forkScoped(
          Effect.forever(
            refresh.pipe(
              Effect.tap(() =>
                failing
                  ? Effect.andThen(
                      Effect.sync(() => (failing = false)),
                      Effect.logInfo("remote node: the node state is read again")
                    )
                  : Effect.void
              ),
              // While the control plane does not answer, the node serves what it holds.
              Effect.catch((error) =>
                failing
                  ? Effect.void
                  : Effect.andThen(
                      Effect.sync(() => (failing = true)),
                      Effect.logWarning("remote node: the node state cannot be read; serving what it holds", {
                        message: error.message
                      })
                    )
              ),
              Effect.andThen(Effect.sleep(options.pollMs ?? remoteStatePoll))
            )
          )
        )

        return RemoteState.of({
          client,
          token: options.token,
          project: (projectId) => projects.get(projectId),
          projectOfHost: (host) => {
            const projectId = hosts.get(Kernel.canonicalHost(host))
            return projectId === undefined ? undefined : projects.get(projectId)
          },
          generation: () => generation,
          refresh,
          changesAfter: (after) => ({
            revision,
            projects: [...read.values()].filter((entry) => entry.at > after).map((entry) => entry.project)
          })
        })
      })
    )

  /**
   * Waits until the state was read once, trying again every second while the control plane does not answer (it may
   * start after the node). A refused token is final: the node stops and says so.
   */
  static readonly ready = Effect.gen(function* () {
    const state = yield* RemoteState
    yield* state.refresh.pipe(
      Effect.tapError((error) =>
        refusedForGood(error)
          ? Effect.logError("remote node: the control plane refuses this node", { message: error.message })
          : Effect.logWarning("remote node: waiting for the control plane", { message: error.message })
      ),
      Effect.retry({ schedule: Schedule.spaced("1 second"), while: (error) => !refusedForGood(error) })
    )
  })
}

/** Whether the control plane refuses this node for good (a wrong token, the node API off): no retry helps. */
const refusedForGood = (error: NodeApiError) => error.status === 401 || error.status === 501

/**
 * The database clusters as a node on another machine reaches them: no node admin here, and each project database's
 * certificate verified with the control plane's cluster authority (`GET /v1/node/database/authority`), read once at
 * start, retrying every second while the control plane does not answer. A certificate another authority signed is
 * refused, as on the control plane's own node.
 */
export const remoteDatabaseNode: Layer.Layer<Database.DatabaseNode, NodeApiError, RemoteState> = Layer.effect(
  Database.DatabaseNode,
  Effect.gen(function* () {
    const { client } = yield* RemoteState
    const { authority } = yield* client.databaseAuthority.pipe(
      Effect.tapError((error) =>
        Effect.logWarning("remote node: waiting for the database authority", { message: error.message })
      ),
      Effect.retry({ schedule: Schedule.spaced("1 second"), while: (error) => !refusedForGood(error) })
    )
    return Database.DatabaseNode.offVerifying(authority ?? undefined)
  })
)

/**
 * After the clusters' authority is rotated, `env.db` meets certificates the authority read at start does not verify:
 * the binding reads it again from the control plane (at most every few seconds) and connects with the new one.
 */
export const remoteDatabaseAuthority = Layer.effect(
  DatabaseAuthorityReread,
  Effect.gen(function* () {
    const { client } = yield* RemoteState
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    return () =>
      run(
        client.databaseAuthority.pipe(
          Effect.tap(() => Effect.logInfo("remote node: the database authority was read again")),
          Effect.map(({ authority }) => authority ?? undefined)
        )
      )
  })
)

const die = (error: NodeApiError) => Effect.die(error)

/**
 * `Node.Nodes` on a node on another machine: the state is `RemoteState`'s (one reader of the control plane's state for
 * the edge and the runtime alike); secrets and usage reports go over the node API. `authorize` checks a bearer against
 * this node's own token (nothing on a node serves the node API, but the check is the same). Secrets the control plane
 * does not give (no answer within the deadline) are `WorkerUnavailable`: the worker's env is not made from a guess. A
 * usage report that fails is a defect of the reporter's call.
 */
export const remoteNodes: Layer.Layer<Node.Nodes, never, RemoteState> = Layer.effect(
  Node.Nodes,
  Effect.gen(function* () {
    const { client, token, changesAfter } = yield* RemoteState
    return Node.Nodes.of({
      authorize: (bearer) =>
        bearer === `Bearer ${Redacted.value(token)}`
          ? Effect.void
          : Effect.fail(new Errors.Unauthorized({ message: "the node token is missing or wrong" })),
      state: (after) => Effect.sync(() => changesAfter(after)),
      secrets: (projectId) =>
        Effect.catchTag(client.secrets(projectId), "NodeApiError", (error) =>
          Effect.andThen(
            Effect.logWarning("remote node: a project's secrets cannot be read", { message: error.message }),
            Effect.fail(
              new Errors.WorkerUnavailable({
                message: "the control plane, which holds this project's settings, cannot be reached: try again shortly"
              })
            )
          )
        ),
      usage: (report) => Effect.catch(client.usage(report), die)
    })
  })
)

/**
 * The mail relay a worker's `env.email` calls, over `POST /v1/node/mail/send`: the control plane checks the grant, the
 * From and the hourly cap, sends and writes the mail log row; its refusals come back as the relay's own errors.
 */
export const remoteMailRelay: Layer.Layer<Email.MailRelay, never, RemoteState> = Layer.effect(
  Email.MailRelay,
  Effect.gen(function* () {
    const state = yield* RemoteState
    return Email.MailRelay.of({
      send: (projectId, body, contentLength) =>
        Effect.gen(function* () {
          if (projectId === undefined) return yield* new Errors.BadRequest({ message: "X-Project-Id is required" })
          if (contentLength !== undefined && contentLength > Email.maxRelayBytes) {
            return yield* new Errors.PayloadTooLarge({ message: `messages are at most ${Email.maxRelayBytes} bytes` })
          }
          const bytes = yield* Stream.mkUint8Array(body)
          return yield* state.client
            .sendMail(projectId, bytes)
            .pipe(
              Effect.catchTag("NodeApiError", (error) =>
                Effect.fail(new Errors.MailSendFailed({ message: error.message, details: { retryable: true } }))
              )
            )
        }),
      binding: (projectId) => Effect.succeed(state.project(projectId)?.bindings.email ?? null)
    })
  })
)

/**
 * The AI gateway a worker's `env.ai` calls, over `POST /v1/ai/chat/completions` with the project's key: the control
 * plane's gateway checks the key, the catalog, the limits and the balance, and writes the ledger row. Calls are held
 * and settled by that gateway, so this node has none to sweep.
 */
export const remoteAiGateway: Layer.Layer<Ai.AiGateway, never, RemoteState> = Layer.effect(
  Ai.AiGateway,
  Effect.gen(function* () {
    const state = yield* RemoteState
    return Ai.AiGateway.of({
      chat: (key, body) =>
        state.client
          .chat(key, body)
          .pipe(
            Effect.catchTag("NodeApiError", (error) =>
              Effect.fail(new Errors.AiUnavailable({ message: `the AI gateway cannot be reached: ${error.message}` }))
            )
          ),
      sweep: Effect.succeed(0)
    })
  })
)

/** Where a remote node's invocation events go: `POST /v1/node/logs`; a report that fails is logged and lost. */
export const remoteEvents: Layer.Layer<InvocationEvents, never, RemoteState> = Layer.effect(
  InvocationEvents,
  Effect.map(Effect.service(RemoteState), ({ client }) =>
    InvocationEvents.of({
      recordAll: (batch) =>
        client.logs(batch).pipe(
          Effect.catch((error) =>
            Effect.as(
              Effect.logWarning("remote node: invocation events not reported", {
                events: batch.length,
                message: error.message
              }),
              0
            )
          )
        )
    })
  )
)

/**
 * The edge's view on a node on another machine: hosts, live deployments and access modes from the node state; each
 * deployment's manifest and worker entry from its bundle (the node's `ArtifactStore`, fetched by digest), once per
 * digest.
 */
export const remoteEdgeView: Layer.Layer<EdgeView, never, RemoteState | Deployments.ArtifactStore> = Layer.effect(
  EdgeView,
  Effect.gen(function* () {
    const state = yield* RemoteState
    const artifacts = yield* Deployments.ArtifactStore
    const file = makeFileHold(artifacts)
    const lives = new Map<string, LiveDeployment>()

    const liveOf = Effect.fnUntraced(function* (deployment: { readonly id: string; readonly digest: string }) {
      const known = lives.get(`${deployment.id} ${deployment.digest}`)
      if (known !== undefined) return known
      const digest = deployment.digest as Deployments.Digest
      const index = yield* artifacts.index(digest)
      if (Option.isNone(index)) {
        return yield* new Errors.ArtifactStoreUnavailable({ message: `no bundle has digest ${digest}` })
      }
      const manifestFile = yield* artifacts.file(digest, Deployments.manifestPath)
      const manifest = Option.isNone(manifestFile)
        ? ({} satisfies Deployments.Manifest)
        : yield* Stream.mkUint8Array(manifestFile.value.content).pipe(
            Effect.flatMap(Deployments.decodeManifest),
            Effect.mapError(
              (error) => new Errors.ArtifactStoreUnavailable({ message: `bundle ${digest}: ${error.message}` })
            )
          )
      const entry = Result.getOrUndefined(
        Deployments.workerEntry(
          manifest,
          index.value.files.map((indexed) => indexed.path)
        )
      )
      const live: LiveDeployment = {
        deployment: { id: deployment.id as LiveDeployment["deployment"]["id"], digest, manifest },
        entry: entry ?? null
      }
      if (lives.size > 10_000) lives.clear()
      lives.set(`${deployment.id} ${deployment.digest}`, live)
      return live
    })

    return EdgeView.of({
      file,
      route: (host) => {
        const project = state.projectOfHost(host)
        // The node state names a project's org by slug: the route's org is read only to check org passes, which the
        // control plane does on its own records for a remote node (`remoteAccess`).
        return Effect.succeed(
          project === undefined
            ? Option.none()
            : Option.some<HostnameRoute>({
                projectId: project.projectId as ProjectId,
                orgId: (project.org ?? "") as OrgId
              })
        )
      },
      generation: state.generation,
      project: (projectId) =>
        Effect.gen(function* () {
          const project = state.project(projectId)
          const policy = {
            mode: (project?.access?.mode ?? "public") as ProjectView["policy"]["mode"],
            hasPassword: false,
            hasBypass: false
          }
          const deployment = project?.deployment ?? null
          return { policy, live: deployment === null ? undefined : yield* liveOf(deployment) } satisfies ProjectView
        })
    })
  })
)

/**
 * `/__service/auth/*` on a remote node: the sign-in flow is the control plane's (the providers' client secrets and the
 * project database's sessions are there), run over `POST /v1/node/auth/signin` with the request's host, method, path
 * and the sign-in's own two cookies; its answer (redirects, cookies, JSON) is sent as it is. A project without the
 * grant in the node state is not asked about: the path is the deployment's. While the control plane does not answer,
 * a granted project's sign-in answers 503 `auth_unavailable`.
 */
export const remoteSignIn: Layer.Layer<EdgeSignIn, never, RemoteState> = Layer.effect(
  EdgeSignIn,
  Effect.gen(function* () {
    const state = yield* RemoteState
    const unavailable: EdgeAnswer = {
      _tag: "Json",
      status: 503,
      body: {
        code: "auth_unavailable",
        message: "the control plane, which runs this site's sign-in, cannot be reached: try again shortly"
      }
    }
    return EdgeSignIn.of({
      handle: (request, projectId, url) => {
        if (state.project(projectId)?.bindings.auth == null) return Effect.succeed(Option.none())
        const flow = request.cookies?.[authFlowCookie]
        const session = request.cookies?.[authSessionCookie]
        return state.client
          .signIn({
            projectId,
            host: request.host,
            method: request.method,
            url: `${url.pathname}${url.search}`,
            ...(flow === undefined ? {} : { flow }),
            ...(session === undefined ? {} : { session })
          })
          .pipe(
            Effect.map(({ answer }) => (answer === null ? Option.none() : Option.some<EdgeAnswer>(answer))),
            Effect.catchTag("NodeApiError", (error) =>
              Effect.as(
                Effect.logWarning("remote node: end-user sign-in cannot be run", { message: error.message }),
                Option.some(unavailable)
              )
            )
          )
      }
    })
  })
)

/**
 * `env.auth.user` on a remote node: the session is looked up by the control plane (`POST /v1/node/auth/user`), which
 * holds the project databases' sessions. A failure rejects the worker's call with `auth_unavailable`.
 */
export const remoteEndUsers = Layer.effect(
  EndUserLookup,
  Effect.map(
    Effect.service(RemoteState),
    ({ client }) =>
      (projectId: string, session: string) =>
        Effect.map(client.endUser({ projectId, session }), ({ user }) => user)
  )
)

/**
 * The passes of protected deployments on a node on another machine: each check and each pass is the control plane's
 * (`/v1/node/access/*`), so a visitor is admitted, refused and handed cookies exactly as on the control plane's own
 * edge. While the control plane does not answer, a protected deployment answers 503 `access_unavailable` (public ones
 * are served from what the node holds).
 */
export const remoteAccess: Layer.Layer<EdgeAccess, never, RemoteState> = Layer.effect(
  EdgeAccess,
  Effect.gen(function* () {
    const { client } = yield* RemoteState
    const unavailable = (error: NodeApiError) =>
      Effect.andThen(
        // The error names the route and the status, never what the visitor presented.
        Effect.logWarning("remote node: an access pass cannot be checked", { message: error.message }),
        Effect.fail(
          new AccessUnavailable({
            message: "the control plane, which checks this deployment's passes, cannot be reached: try again shortly"
          })
        )
      )
    return EdgeAccess.of({
      admits: (request, projectId) =>
        client
          .accessCheck({
            projectId,
            host: request.host,
            ...(request.bypass === undefined ? {} : { bypass: request.bypass }),
            ...(request.session === undefined ? {} : { pass: request.session })
          })
          .pipe(Effect.catchTag("NodeApiError", unavailable)),
      callback: (host, code, next) =>
        client.accessCode({ host, code }).pipe(
          Effect.map((pass): EdgeAnswer =>
            pass.pass === null
              ? { _tag: "Problem", status: 403, code: "forbidden", message: "this sign-in link cannot be used" }
              : passAnswer({ value: pass.pass, maxAge: pass.maxAge }, next)
          ),
          Effect.catchTag("Forbidden", (error) =>
            Effect.succeed<EdgeAnswer>({ _tag: "Problem", status: 403, code: "forbidden", message: error.message })
          ),
          Effect.catchTag("NodeApiError", unavailable)
        ),
      password: (host, projectId, password, next) =>
        client.accessPassword({ projectId, host, password }).pipe(
          Effect.map((pass) =>
            pass.pass === null
              ? Option.none<EdgeAnswer>()
              : Option.some(passAnswer({ value: pass.pass, maxAge: pass.maxAge }, next))
          ),
          Effect.catchTag("NodeApiError", unavailable)
        )
    })
  })
)
