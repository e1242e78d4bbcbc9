import { Context, Effect, Layer, Option, Redacted } from "effect"
import { AccessPolicies } from "../access/AccessPolicies.ts"
import { Deployments } from "../deployments/Deployments.ts"
import { NodeApiOff, NotFound, Unauthorized, type WorkerUnavailable } from "../errors/Errors.ts"
import { HostnameStore } from "../hostnames/HostnameStore.ts"
import { makeId, type ProjectId } from "../kernel/Ids.ts"
import { NodeRevisions } from "../kernel/NodeRevisions.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { Secrets } from "../secrets/Secrets.ts"
import type { NodeProject, NodeState, OpenedSecrets, UsageRecorded, UsageReport } from "./Node.ts"
import { NodeBindings } from "./NodeBinding.ts"
import { NodeConfig } from "./NodeConfig.ts"

/** Projects answered per state read; `revision` then says where the next read starts. */
const pageSize = 200

/**
 * The node API of decisions.md part 6: what a node converges on. Every call is authorized by `SERVICE_NODE_TOKEN`
 * first (unset: 501 `node_api_off`; wrong or missing: 401). A project's add-on bindings are the areas' `node` fields,
 * folded into `NodeBindings`; this is built after every area (`Area.services`), so it may read any of them.
 */
export class Nodes extends Context.Service<
  Nodes,
  {
    readonly authorize: (bearer: string | undefined) => Effect.Effect<void, NodeApiOff | Unauthorized>
    /** The projects changed after `after` (exclusive), oldest change first, with what a node applies. */
    readonly state: (after: number) => Effect.Effect<NodeState>
    /**
     * A project's secrets, opened: the worker's environment. Never logged. `WorkerUnavailable` when they cannot be
     * read now (a node whose control plane does not answer): a worker's env is never made without them.
     */
    readonly secrets: (projectId: string) => Effect.Effect<OpenedSecrets, NotFound | WorkerUnavailable>
    /** A usage report, recorded by each binding that reads one (storage: `usedBytes`); ids none recorded are listed. */
    readonly usage: (report: UsageReport) => Effect.Effect<UsageRecorded>
  }
>()("@hostplane/core/node/Nodes") {
  static readonly layer = Layer.effect(
    Nodes,
    Effect.gen(function* () {
      const config = yield* NodeConfig
      const tokens = yield* Tokens
      const revisions = yield* NodeRevisions
      const projects = yield* ProjectStore
      const orgs = yield* OrgStore
      const hostnames = yield* HostnameStore
      const deployments = yield* Deployments
      const access = yield* AccessPolicies
      const secrets = yield* Secrets
      const bindings = yield* NodeBindings
      const recorders = bindings.flatMap((binding) => (binding.usage === undefined ? [] : [binding.usage]))
      const expected = Option.isSome(config.token)
        ? Option.some(yield* tokens.hash(Redacted.value(config.token.value)))
        : Option.none<string>()

      const authorize = Effect.fn("Nodes.authorize")(function* (bearer: string | undefined) {
        if (Option.isNone(expected)) {
          return yield* new NodeApiOff({ message: "the node API is off: SERVICE_NODE_TOKEN is not set" })
        }
        // Hashes compared, so the comparison takes the same time whatever the token.
        if (bearer === undefined || (yield* tokens.hash(bearer)) !== expected.value) {
          return yield* new Unauthorized({ message: "a node token is required" })
        }
      })

      type Bindings = NodeProject["bindings"]
      // Every binding null: a removed project's, and the start of a live one's.
      const none = Object.fromEntries(bindings.map((binding) => [binding.name, null])) as Bindings
      const bindingsOf = Effect.fnUntraced(function* (id: ProjectId) {
        const values: Record<string, unknown> = { ...none }
        for (const binding of bindings) values[binding.name] = yield* binding.of(id)
        return values as Bindings
      })

      const projectState = Effect.fnUntraced(function* (projectId: string): Effect.fn.Return<NodeProject> {
        const id = makeId("prj", projectId)
        const row = yield* projects.findById(id)
        if (Option.isNone(row) || row.value.deletingSince !== null) {
          return {
            projectId,
            removed: true,
            org: null,
            name: null,
            hostnames: [],
            deployment: null,
            access: null,
            secrets: [],
            bindings: none
          }
        }
        const project = row.value
        const org = yield* orgs.findById(project.orgId)
        const live = yield* deployments.live(id)
        return {
          projectId,
          removed: false,
          org: Option.isSome(org) ? org.value.slug : null,
          name: project.name,
          hostnames: (yield* hostnames.listByProject(id)).filter((h) => h.status === "active").map((h) => h.name),
          deployment: Option.isSome(live) ? { id: live.value.id, digest: live.value.digest } : null,
          access: { mode: (yield* access.policyOf(id)).mode },
          secrets: (yield* secrets.open(id)).map((secret) => ({ name: secret.name, version: secret.version })),
          // Each area's binding (decisions.md part 6).
          bindings: yield* bindingsOf(id)
        }
      })

      const state = Effect.fn("Nodes.state")(function* (after: number) {
        const changes = yield* revisions.changedAfter(after, pageSize)
        return {
          revision: changes.revision,
          projects: yield* Effect.forEach(changes.projects, (change) => projectState(change.projectId))
        }
      })

      const openSecrets = Effect.fn("Nodes.secrets")(function* (projectId: string) {
        const id = makeId("prj", projectId)
        const row = yield* projects.findById(id)
        if (Option.isNone(row)) return yield* new NotFound({ message: `project ${projectId} not found` })
        const opened = yield* secrets.open(id)
        return {
          items: opened.map((secret) => ({
            name: secret.name,
            version: secret.version,
            value: Redacted.value(secret.value)
          }))
        }
      })

      const usage = Effect.fn("Nodes.usage")(function* (report: UsageReport) {
        const lines = report.items.map((item) => ({
          projectId: makeId("prj", item.projectId),
          storageBytes: item.storageBytes
        }))
        const known = new Set<string>()
        for (const record of recorders) for (const projectId of yield* record(lines)) known.add(projectId)
        return {
          recorded: known.size,
          ignored: [...new Set(report.items.map((item) => item.projectId))].filter((id) => !known.has(id))
        }
      })

      return Nodes.of({ authorize, state, secrets: openSecrets, usage })
    })
  )
}
