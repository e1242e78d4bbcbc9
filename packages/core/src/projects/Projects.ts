import { Context, Effect, Layer, Option } from "effect"
import { projectRules } from "./ProjectRules.ts"
import {
  BadRequest,
  Forbidden,
  HostnameTaken,
  NotFound,
  OpInFlight,
  ProjectLimitReached,
  ProjectNameTaken
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { Settings } from "../kernel/Settings.ts"
import { serviceHostnames } from "./ServiceHostnames.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { define, handler, type JobHandler } from "../jobs/Job.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { type Operation, operationOf, OperationPayload } from "../operations/Operation.ts"
import type { HoldingCounter } from "../orgs/OrgHooks.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { toDeployment } from "../deployments/Deployment.ts"
import { DeploymentStore } from "../deployments/DeploymentStore.ts"
import { DatabaseStore } from "../database/DatabaseStore.ts"
import { UserStore } from "../identity/UserStore.ts"
import { type Project, type ProjectDetail, type ProjectOverview, type ProjectRow, toProject } from "./Project.ts"
import { addonFlags, AddonRegistry } from "../addons/Addon.ts"
import { deletePhases, ProjectTeardown } from "./ProjectHooks.ts"
import { ProjectStore } from "./ProjectStore.ts"
import { makeId, newId, type OperationId, type ProjectId } from "../kernel/Ids.ts"
import { NodeRevisions } from "../kernel/NodeRevisions.ts"
import { NodeChanges } from "../kernel/NodeChanges.ts"
import { Transactor } from "../kernel/Transactor.ts"

/** The project delete (decisions.md part 4): the spec's teardown order, one phase per step. */
export const projectDelete = define({ kind: "project_delete", payload: OperationPayload, phases: deletePhases })

/** Projects of spec 4.3: the per-plan limit is checked under the org lock; delete is a durable operation. */
export class Projects extends Context.Service<
  Projects,
  {
    readonly list: (actor: Actor, slug: string) => Effect.Effect<ReadonlyArray<Project>, NotFound | Forbidden>
    readonly create: (
      actor: Actor,
      slug: string,
      name: string
    ) => Effect.Effect<Project, NotFound | Forbidden | ProjectNameTaken | HostnameTaken | ProjectLimitReached>
    readonly get: (actor: Actor, slug: string, name: string) => Effect.Effect<ProjectDetail, NotFound | Forbidden>
    readonly overview: (
      actor: Actor,
      slug: string,
      name: string
    ) => Effect.Effect<ProjectOverview, NotFound | Forbidden>
    readonly remove: (
      actor: Actor,
      slug: string,
      name: string,
      confirm: string
    ) => Effect.Effect<{ readonly operationId: OperationId }, NotFound | Forbidden | BadRequest | OpInFlight>
    readonly operation: (actor: Actor, slug: string, opId: string) => Effect.Effect<Operation, NotFound | Forbidden>
  }
>()("@hostplane/core/projects/Projects") {
  static readonly layer = Layer.effect(
    Projects,
    Effect.gen(function* () {
      const store = yield* ProjectStore
      const orgStore = yield* OrgStore
      const jobs = yield* Jobs
      const policy = yield* Policy
      const mutation = yield* Mutation
      const tokens = yield* Tokens
      const settings = yield* Settings
      const registry = yield* AddonRegistry
      const addonsOf = (projectId: ProjectId) => addonFlags(registry, projectId)
      const deployments = yield* DeploymentStore
      // A port, not the database area's service (built after this one): the overview reads the newest generation.
      const databases = yield* DatabaseStore
      const users = yield* UserStore

      const reserved = yield* serviceHostnames

      const list = Effect.fn("Projects.list")(function* (actor: Actor, slug: string) {
        const { org } = yield* policy.require(actor, slug, projectRules.list)
        return (yield* store.list(org.id)).map(toProject)
      })

      const create = Effect.fn("Projects.create")(function* (actor: Actor, slug: string, name: string) {
        const grant = yield* mutation.authorizeOrg(actor, slug, projectRules.create)
        const hostname = `${name}.${settings.appDomain}`
        if (reserved.has(hostname)) {
          return yield* new HostnameTaken({ message: `${hostname} is one of the service's own hostnames` })
        }
        // The org lock serialises creates of one org, so concurrent requests cannot pass the limit together.
        return yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            // A name already used is the answer whatever the count: upgrading would not help (not project_limit).
            if (Option.isSome(yield* store.findByName(org.id, name))) {
              return yield* new ProjectNameTaken({ message: "a project with this name already exists" })
            }
            const limit = settings.planLimits[org.plan].projectLimit
            const count = yield* store.count(org.id)
            if (count >= limit) {
              return yield* new ProjectLimitReached({
                message: `the ${org.plan} plan allows ${limit} projects`,
                details: { limit, count, plan: org.plan }
              })
            }
            const row: ProjectRow = {
              id: yield* newId(tokens, "prj"),
              orgId: org.id,
              name,
              hostname,
              createdAt: at,
              liveDeploymentId: null,
              deletingSince: null
            }
            yield* store.insert(row)
            return audited(toProject(row), { action: "project.create", target: row.id, data: { name } })
          })
        )
      })

      const liveOf = (project: ProjectRow) =>
        project.liveDeploymentId === null
          ? Effect.succeed(Option.none())
          : deployments.get(project.id, project.liveDeploymentId)

      const get = Effect.fn("Projects.get")(function* (actor: Actor, slug: string, name: string) {
        const { project } = yield* policy.requireProject(actor, slug, name, projectRules.get)
        const live = yield* liveOf(project)
        return {
          ...toProject(project),
          liveDeployment: Option.isSome(live) ? toDeployment(live.value, project.liveDeploymentId) : null,
          addons: yield* addonsOf(project.id)
        }
      })

      const overview = Effect.fn("Projects.overview")(function* (actor: Actor, slug: string, name: string) {
        const { org, project } = yield* policy.requireProject(actor, slug, name, projectRules.overview)
        const live = yield* liveOf(project)
        const uploader = Option.isSome(live) ? yield* users.findById(live.value.uploadedBy) : Option.none()
        const addons = yield* addonsOf(project.id)
        const declared = Option.isSome(live) ? live.value.manifest : {}
        const state = (key: keyof typeof addons) => ({ declared: declared[key] === true, provisioned: addons[key] })
        const notices = yield* orgStore.listNotifications(org.id, 50)
        const [newest] = yield* databases.generations(project.id)
        return {
          project: toProject(project),
          serving: Option.isSome(live)
            ? {
                deployment: toDeployment(live.value, project.liveDeploymentId),
                uploader: Option.isSome(uploader)
                  ? { userId: uploader.value.id, name: uploader.value.name, email: uploader.value.email }
                  : null
              }
            : null,
          recentDeployments: (yield* deployments.list(project.id, 5)).map((row) =>
            toDeployment(row, project.liveDeploymentId)
          ),
          lastBackup:
            newest === undefined ? null : { epoch: newest.epoch, seq: newest.seq, createdAt: newest.createdAt },
          resources: {
            database: state("database"),
            storage: state("storage"),
            email: state("email"),
            auth: state("auth"),
            ai: state("ai")
          },
          notifications: notices.filter((notice) => notice.projectName === project.name).slice(0, 5)
        }
      })

      const remove = Effect.fn("Projects.remove")(function* (
        actor: Actor,
        slug: string,
        name: string,
        confirm: string
      ) {
        // A delete of a project being deleted answers op_in_flight itself, naming the running operation.
        const grant = yield* mutation.authorizeProject(actor, slug, name, projectRules.remove)
        if (confirm.trim() !== grant.project.name) {
          return yield* new BadRequest({ message: "confirm must equal the project name" })
        }
        return yield* mutation.project(grant, ({ org, project, at }) =>
          Effect.gen(function* () {
            const running = yield* jobs.findUnfinished(projectDelete, project.id)
            const inFlight = (running: Option.Option<{ readonly id: string }>) =>
              new OpInFlight({
                message: "this project is already being deleted",
                details: Option.isSome(running) ? { operationId: running.value.id } : {}
              })
            if (Option.isSome(running) || project.deletingSince !== null) return yield* inFlight(running)
            yield* store.markDeleting(project.id, at)
            const started = yield* jobs.enqueue(
              projectDelete,
              { orgId: org.id, projectId: project.id },
              { id: yield* tokens.id("op"), key: project.id }
            )
            if (Option.isNone(started)) return yield* inFlight(yield* jobs.findUnfinished(projectDelete, project.id))
            const id = makeId("op", started.value)
            return audited(
              { operationId: id },
              { action: "project.delete", target: project.id, data: { name: project.name, operationId: id } }
            )
          })
        )
      })

      const operation = Effect.fn("Projects.operation")(function* (actor: Actor, slug: string, opId: string) {
        const { org } = yield* policy.require(actor, slug, projectRules.operation)
        const operation = Option.flatMap(yield* jobs.get(opId), (job) => operationOf(job, org.id))
        if (Option.isNone(operation)) return yield* new NotFound({ message: `operation ${opId} not found` })
        return operation.value
      })

      return Projects.of({ list, create, get, overview, remove, operation })
    })
  )
}

/**
 * The project delete: routing first, metadata last; each phase runs the areas' idempotent teardown steps, then the
 * project's own write of that phase (its hostnames after routing, its row after metadata). Leaving routing and leaving
 * the store each raise the node revision, so a node stops serving the project, then drops it.
 */
export const projectDeleteHandler: Effect.Effect<
  JobHandler,
  never,
  ProjectStore | ProjectTeardown | Transactor | NodeRevisions
> = Effect.gen(function* () {
  const store = yield* ProjectStore
  const steps = yield* ProjectTeardown
  const tx = yield* Transactor
  const revisions = yield* NodeRevisions
  const nodeChanges = yield* NodeChanges
  const withRaise = (projectId: ProjectId, write: Effect.Effect<void>) =>
    Effect.andThen(
      tx.withTransaction(Effect.andThen(write, revisions.raise(projectId))),
      nodeChanges.changed(projectId)
    )
  return handler(projectDelete, {
    run: (phase, job) =>
      Effect.gen(function* () {
        const project = yield* store.findById(job.payload.projectId)
        if (Option.isNone(project)) return
        const id = project.value.id
        for (const step of steps) {
          if (step.phase === phase) yield* step.run(project.value, job)
        }
        if (phase === "routing") yield* withRaise(id, store.removeHostnames(id))
        if (phase === "metadata") yield* withRaise(id, store.remove(id))
      })
  })
})

/** The projects of an org for `org_not_empty`. */
export const projectHoldings = Effect.map(Effect.service(ProjectStore), (store): HoldingCounter => ({
  kind: "projects",
  count: (orgId) =>
    Effect.map(store.list(orgId), (rows) => ({ count: rows.length, names: rows.map((row) => row.name).slice(0, 5) }))
}))
