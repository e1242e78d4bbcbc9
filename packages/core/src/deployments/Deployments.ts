import { Context, Effect, Fiber, Layer, Option, type Stream } from "effect"
import { deploymentsRules } from "./DeploymentsRules.ts"
import {
  type ArtifactStoreUnavailable,
  BadRequest,
  type Forbidden,
  type InvalidBundle,
  NotFound,
  type OpInFlight,
  type PayloadTooLarge
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation, unaudited } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { pageSize } from "../kernel/PageCursor.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { BundleReader } from "./BundleReader.ts"
import { type Deployment, type DeploymentList, type DeploymentRow, toDeployment } from "./Deployment.ts"
import { DeploymentStore } from "./DeploymentStore.ts"
import { WorkerCheck } from "./WorkerCheck.ts"
import { type GitHeaders, parseGitHeaders } from "./GitHeaders.ts"
import { bundleTooLarge } from "./Manifest.ts"
import type { DeploymentId, ProjectId } from "../kernel/Ids.ts"
import { newId } from "../kernel/Ids.ts"

/** What an upload declares besides its body: the raw `X-Service-Git-*` values and its `Content-Length`, if any. */
export interface UploadHeaders extends GitHeaders {
  readonly contentLength?: number | undefined
}

/** One page request of the deployment list: `limit` 1..200 (default 50), `cursor` from the previous page. */
export interface DeploymentPage {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

const cursorPattern = /^[1-9][0-9]{0,9}$/

/**
 * Deployments of spec 4.3: an upload is authorized before a byte of it is read, streams through the BundleReader
 * (never buffered), and becomes a new version that goes live at once; rollback only moves the live pointer.
 */
export class Deployments extends Context.Service<
  Deployments,
  {
    /** Newest first (viewer). */
    readonly list: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      page?: DeploymentPage
    ) => Effect.Effect<DeploymentList, NotFound | Forbidden | BadRequest>
    /**
     * Reads the gzipped tar `body` into the artifact store and records it as the project's next version, live
     * (member). Identical bytes uploaded again are a new version. A refused bundle leaves no row and no artifact.
     */
    readonly upload: <E>(
      actor: Actor,
      orgSlug: string,
      projectName: string,
      body: Stream.Stream<Uint8Array, E>,
      headers: UploadHeaders
    ) => Effect.Effect<
      Deployment,
      NotFound | Forbidden | BadRequest | OpInFlight | InvalidBundle | PayloadTooLarge | ArtifactStoreUnavailable | E
    >
    /** Makes an existing deployment of the project live again (member); no deployment is created. */
    readonly rollback: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      deploymentId: DeploymentId
    ) => Effect.Effect<Deployment, NotFound | Forbidden | OpInFlight>
    /**
     * The deployment a project serves, none before its first upload: what the edge resolves a routed hostname to,
     * then reads files from the ArtifactStore under its `digest`. No authorization: not for API callers.
     */
    readonly live: (projectId: ProjectId) => Effect.Effect<Option.Option<Deployment>>
  }
>()("@hostplane/core/deployments/Deployments") {
  static readonly layer = Layer.effect(
    Deployments,
    Effect.gen(function* () {
      const store = yield* DeploymentStore
      const projects = yield* ProjectStore
      const reader = yield* BundleReader
      // A host without a worker runtime (or with it off) gives `WorkerCheck.off`: no worker code is checked at deploy.
      const workerCheck = yield* WorkerCheck
      const policy = yield* Policy
      const mutation = yield* Mutation
      const tokens = yield* Tokens

      const list = Effect.fn("Deployments.list")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        page: DeploymentPage = {}
      ) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, deploymentsRules.list)
        if (page.cursor !== undefined && !cursorPattern.test(page.cursor)) {
          return yield* new BadRequest({
            message: "cursor is not one this list handed out",
            details: { query: "cursor" }
          })
        }
        const limit = pageSize(page.limit)
        const before = page.cursor === undefined ? undefined : Number(page.cursor)
        const rows = yield* store.list(project.id, limit + 1, before)
        const items = rows.slice(0, limit).map((row) => toDeployment(row, project.liveDeploymentId))
        const last = items.at(-1)
        return { items, nextCursor: rows.length > limit && last !== undefined ? String(last.version) : null }
      })

      const upload = Effect.fn("Deployments.upload")(function* <E>(
        actor: Actor,
        orgSlug: string,
        projectName: string,
        body: Stream.Stream<Uint8Array, E>,
        headers: UploadHeaders
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, deploymentsRules.upload)
        const git = yield* Effect.fromResult(parseGitHeaders(headers))
        const declared = headers.contentLength
        if (declared !== undefined && declared > reader.limits.compressedBytes) {
          return yield* bundleTooLarge("compressed_bytes", reader.limits.compressedBytes, declared)
        }
        const bundle = yield* reader.read(body)
        // The worker check (the runtime loading the entry, tens of ms or more) runs beside the transaction instead of
        // before it: on a small bundle the two were most of the upload's fixed time. The transaction joins the check
        // after its writes and before its commit, so a refused bundle fails the transaction and nothing is kept; a
        // check that settles after the lock is taken holds the project's row only that much longer.
        const checking = yield* Effect.forkChild(workerCheck.check(bundle.digest, bundle.manifest), {
          startImmediately: true
        })
        const created = mutation.project(
          grant,
          ({ project, at }) =>
            Effect.gen(function* () {
              const row: DeploymentRow = {
                id: yield* newId(tokens, "dep"),
                projectId: project.id,
                version: yield* store.nextVersion(project.id),
                digest: bundle.digest,
                bytes: bundle.bytes,
                files: bundle.files,
                createdAt: at,
                uploadedBy: actor.userId,
                manifest: bundle.manifest,
                git
              }
              yield* store.insert(row)
              yield* projects.setLiveDeployment(project.id, row.id)
              yield* Fiber.join(checking)
              return audited(toDeployment(row, row.id), {
                action: "deployment.create",
                target: project.id,
                data: {
                  deploymentId: row.id,
                  version: row.version,
                  digest: row.digest,
                  bytes: row.bytes,
                  files: row.files,
                  previous: project.liveDeploymentId
                }
              })
            }),
          { node: true }
        )
        // A refused bundle answers its check's refusal as when the check ran first, not a refusal of the transaction
        // (a project being deleted, say) that happened to come first.
        return yield* created.pipe(
          Effect.catch((error) => Effect.andThen(Fiber.join(checking), Effect.fail(error))),
          // A refused bundle keeps nothing: no deployment, and none of the artifacts this upload stored.
          Effect.tapError(() => Effect.ignore(reader.discard(bundle)))
        )
      })

      const rollback = Effect.fn("Deployments.rollback")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        deploymentId: DeploymentId
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, deploymentsRules.rollback)
        return yield* mutation.project(
          grant,
          ({ project }) =>
            Effect.gen(function* () {
              const target = yield* store.get(project.id, deploymentId)
              if (Option.isNone(target)) {
                return yield* new NotFound({
                  message: `deployment ${deploymentId} not found in project ${project.name}`
                })
              }
              const deployment = toDeployment(target.value, target.value.id)
              if (project.liveDeploymentId === target.value.id) return unaudited(deployment)
              yield* projects.setLiveDeployment(project.id, target.value.id)
              return audited(deployment, {
                action: "deployment.rollback",
                target: project.id,
                data: {
                  deploymentId: target.value.id,
                  version: target.value.version,
                  previous: project.liveDeploymentId
                }
              })
            }),
          { node: true }
        )
      })

      const live = Effect.fn("Deployments.live")(function* (projectId: ProjectId) {
        const project = yield* projects.findById(projectId)
        if (Option.isNone(project) || project.value.liveDeploymentId === null) return Option.none<Deployment>()
        const row = yield* store.get(projectId, project.value.liveDeploymentId)
        return Option.map(row, (value) => toDeployment(value, value.id))
      })

      return Deployments.of({ list, upload, rollback, live })
    })
  )
}
