import { Context, DateTime, Duration, Effect, Layer, Option, Redacted, Schema, Semaphore } from "effect"
import {
  ConfirmMismatch,
  ExportFailed,
  type Forbidden,
  NoHomeNode,
  NoNodeAdmin,
  NotAbortable,
  NotFound,
  type OpInFlight,
  OperationInProgress,
  Suspended
} from "../errors/Errors.ts"
import { baseKind, type JobDefinition, handler, type JobHandler, JobFailure, type JobRow, pinned } from "../jobs/Job.ts"
import { Jobs } from "../jobs/Jobs.ts"
import type { Actor } from "../kernel/Actor.ts"
import { makeId, type OperationId, ProjectId } from "../kernel/Ids.ts"
import { audited, Mutation, unaudited } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { NodeRevisions } from "../kernel/NodeRevisions.ts"
import { type Operation, operationOf } from "../operations/Operation.ts"
import { type Notice, Notifications } from "../orgs/Notifications.ts"
import type { ProjectRow } from "../projects/Project.ts"
import { projectDelete } from "../projects/Projects.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { databaseRules } from "./DatabaseRules.ts"
import { BackupStore, type BackupStoreError } from "./BackupStore.ts"
import {
  type DatabaseConnect,
  type DatabaseEndpoint,
  deleteDatabase,
  type DatabaseRow,
  type DatabaseToken,
  type DatabaseTokenMeta,
  type Generation,
  type GenerationRow,
  passwordContext,
  type RestoreRequest,
  restoreGeneration,
  databaseGenerations,
  databaseNodeCall,
  databaseSchedule,
  databaseNodePurge,
  type NodeCallPayload,
  rebuildDatabase
} from "./Database.ts"
import { DatabaseConfig } from "./DatabaseConfig.ts"
import {
  DatabaseNode,
  type DatabaseNodeError,
  DatabaseNodeError as DatabaseNodeErrorOf,
  type NodeEndpoint
} from "./DatabaseNode.ts"
import { DatabaseStore } from "./DatabaseStore.ts"
import { portOn } from "../kernel/Port.ts"

const toGeneration = (row: GenerationRow): Generation => ({
  epoch: row.epoch,
  seq: row.seq,
  bytes: row.bytes,
  sha256: row.sha256,
  offsiteKey: row.offsiteKey,
  createdAt: row.createdAt,
  lastCheckedAt: row.lastCheckedAt
})

const nodeUnavailable = (error: DatabaseNodeError) =>
  error.reason === "unavailable" ? new NoHomeNode({ message: error.message }) : Effect.die(error)

/** What the node API shows of a project's database binding: DatabaseConnect, or null when there is none. */
export type DatabaseBinding = DatabaseConnect | null

/**
 * The database add-on of spec 4.6: a PostgreSQL database per project run by the node admin (`DatabaseNode`), its
 * password sealed in the control database and never rotated, tokens kept as verifiers only, physical generations in
 * the backup store, and restore and delete as durable operations that can be aborted before `committing`.
 */
export class Databases extends Context.Service<
  Databases,
  {
    readonly status: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<{ readonly db: boolean }, NotFound | Forbidden>
    readonly create: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<DatabaseConnect, NotFound | Forbidden | OpInFlight | NoHomeNode | NoNodeAdmin>
    readonly connect: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<DatabaseConnect, NotFound | Forbidden | NoHomeNode | NoNodeAdmin>
    readonly endpoint: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<DatabaseEndpoint, NotFound | Forbidden | NoHomeNode | NoNodeAdmin>
    readonly tokens: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<ReadonlyArray<DatabaseTokenMeta>, NotFound | Forbidden>
    readonly createToken: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<DatabaseToken, NotFound | Forbidden | OpInFlight | NoHomeNode | NoNodeAdmin>
    readonly deleteToken: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      user: string
    ) => Effect.Effect<void, NotFound | Forbidden | OpInFlight | NoHomeNode | NoNodeAdmin>
    readonly exportImage: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<
      { readonly key: string },
      NotFound | Forbidden | Suspended | ExportFailed | NoHomeNode | NoNodeAdmin
    >
    readonly generations: (
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<ReadonlyArray<Generation>, NotFound | Forbidden>
    readonly restore: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      request: RestoreRequest
    ) => Effect.Effect<
      { readonly operationId: OperationId },
      NotFound | Forbidden | OpInFlight | OperationInProgress | Suspended | NoHomeNode | NoNodeAdmin
    >
    readonly remove: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      confirm: string
    ) => Effect.Effect<
      { readonly operationId: OperationId },
      NotFound | Forbidden | OpInFlight | ConfirmMismatch | OperationInProgress
    >
    readonly operation: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      opId: string
    ) => Effect.Effect<Operation, NotFound | Forbidden>
    readonly abort: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      opId: string
    ) => Effect.Effect<Operation, NotFound | Forbidden | NotAbortable>
    /** Whether the project holds a database (ProjectDetail's `addons.database`). */
    readonly granted: (projectId: ProjectId) => Effect.Effect<boolean>
    /** The node state's `db` binding. */
    readonly binding: (projectId: ProjectId) => Effect.Effect<DatabaseBinding>
    /** The newest generation's time (the overview's last backup). */
    readonly lastBackup: (projectId: ProjectId) => Effect.Effect<string | null>
    /** Takes a generation of every database whose last one is older than the current grid boundary. */
    readonly backupDue: Effect.Effect<void>
    /** Re-hashes every generation not checked within the check interval; a mismatch is recorded, never trusted. */
    readonly checkDue: Effect.Effect<void>
    /**
     * Project teardown (spec 4.3's order): `drain` in the draining phase (the suspended database refuses connections
     * and its open sessions end), `node` in the data phase (the cluster goes to the tombstone, the record goes),
     * `backups` in the repositories phase ("git repositories and backups": the images and their rows).
     */
    readonly teardown: (projectId: ProjectId, part: "drain" | "node" | "backups") => Effect.Effect<void>
    readonly handlers: ReadonlyArray<JobHandler>
  }
>()("@hostplane/core/database/Databases") {
  static readonly layer = Layer.effect(
    Databases,
    Effect.gen(function* () {
      const store = yield* DatabaseStore
      const policy = yield* Policy
      const mutation = yield* Mutation
      const sealer = yield* Sealer
      const tokens = yield* Tokens
      const jobs = yield* Jobs
      const config = yield* DatabaseConfig
      const transactor = yield* Transactor
      const revisions = yield* NodeRevisions
      const notifications = yield* Notifications
      const projects = yield* ProjectStore
      const maybeNode = portOn(yield* DatabaseNode)
      const maybeBackups = portOn(yield* BackupStore)

      const noAdmin = new NoNodeAdmin({ message: "this deployment runs no database node admin" })
      const nodeAdmin = Option.match(Option.all([maybeNode, maybeBackups]), {
        onNone: () => Effect.fail(noAdmin),
        onSome: ([node, backups]) => Effect.succeed({ node, backups })
      })

      // This replica's home, when its node admin holds clusters on this machine only: a database homed elsewhere has
      // its node work handed to its home as a job pinned there, and its generations are taken there.
      const here = Option.match(maybeNode, { onNone: () => undefined, onSome: (node) => node.home })
      const elsewhere = (row: DatabaseRow) => here !== undefined && row.home !== null && row.home !== here
      /** The kind of an operation on the database: pinned to its home when it has one. */
      const pinFor = <P>(row: DatabaseRow, definition: JobDefinition<P>) =>
        row.home === null ? definition : pinned(definition, row.home)

      /** How long a request waits for node work handed to the database's home before answering 503 `no_home_node`. */
      const handoverWait = Duration.seconds(30)

      /**
       * Hands node work to the database's home and, unless `wait` is false, waits until it has run there: a failure
       * there is this call's failure, and a home that does not run it in time (down, or gone) is `no_home_node`.
       */
      const handOver = Effect.fnUntraced(function* (
        row: DatabaseRow,
        call: Omit<NodeCallPayload, "projectId" | "notAfter">,
        wait = true
      ) {
        const deadline = DateTime.toEpochMillis(yield* DateTime.now) + Duration.toMillis(handoverWait)
        const notAfter = wait ? DateTime.formatIso(DateTime.makeUnsafe(deadline)) : null
        const id = yield* jobs.enqueue(pinned(databaseNodeCall, row.home!), {
          ...call,
          projectId: row.projectId,
          notAfter
        })
        if (!wait || Option.isNone(id)) return
        for (;;) {
          const job = yield* jobs.get(id.value)
          if (Option.isSome(job) && job.value.terminalCode === "done") return
          if (Option.isSome(job) && job.value.terminalCode !== null) {
            return yield* new DatabaseNodeErrorOf({
              reason: "failed",
              message: `the database's home ${row.home} failed: ${job.value.lastError ?? job.value.terminalCode}`
            })
          }
          if (DateTime.toEpochMillis(yield* DateTime.now) > deadline) {
            return yield* new DatabaseNodeErrorOf({
              reason: "unavailable",
              message: `the database lives on replica ${row.home}, which did not do the work in time`
            })
          }
          yield* Effect.sleep(Duration.millis(100))
        }
      })

      const locks = new Map<ProjectId, Semaphore.Semaphore>()
      const oneGenerationAtATime = (projectId: ProjectId) => {
        let lock = locks.get(projectId)
        if (lock === undefined) {
          lock = Semaphore.makeUnsafe(1)
          locks.set(projectId, lock)
        }
        return lock
      }

      /**
       * A backup or restore notice about a project's database, mailed to the org's admins; none once the project is
       * gone. `once` names the event: told again (a phase repeated after a crash), it is not recorded or mailed twice.
       */
      const notifyAbout = Effect.fnUntraced(function* (
        projectId: ProjectId,
        once: string,
        kind: Notice["kind"],
        subject: (name: string) => string,
        message: (name: string) => string
      ) {
        const project = yield* projects.findById(projectId)
        if (Option.isNone(project)) return
        const name = project.value.name
        yield* notifications.notify(project.value.orgId, {
          kind,
          projectName: name,
          subject: subject(name),
          message: message(name),
          once
        })
      })

      const required = (projectId: ProjectId) =>
        Effect.flatMap(store.find(projectId), (row) =>
          Option.isSome(row)
            ? Effect.succeed(row.value)
            : Effect.fail(new NotFound({ message: "this project has no database" }))
        )

      /**
       * The project's delete holds its database from the moment it is accepted until its data phase removes it: what
       * would use the database answers 409 `suspended` (restore, export), and a database delete 409
       * `operation_in_progress`; the details name the project's delete operation.
       */
      const projectDeleting = Effect.fnUntraced(function* (project: ProjectRow) {
        if (project.deletingSince === null) return Option.none<{ operationId?: string }>()
        const running = yield* jobs.findUnfinished(projectDelete, project.id)
        return Option.some(Option.isSome(running) ? { operationId: running.value.id } : {})
      })

      const passwordOf = (row: DatabaseRow) =>
        Effect.orDie(sealer.open(row.sealedPassword, passwordContext(row.projectId)))

      const connectOf = (row: DatabaseRow, at: NodeEndpoint, password: string, user: string): DatabaseConnect => ({
        host: at.host,
        port: at.port,
        database: "app",
        user,
        password,
        sslmode: at.sslmode,
        url: `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${at.host}:${at.port}/app?sslmode=${at.sslmode}`
      })

      /** Where the database listens: its home's recorded endpoint when it lives on another replica, else the node's. */
      const whereIs = Effect.fnUntraced(function* (projectId: ProjectId) {
        const { node } = yield* nodeAdmin
        const row = yield* store.find(projectId)
        if (Option.isSome(row) && elsewhere(row.value)) {
          const recorded = row.value.endpoint
          if (recorded === null) {
            return yield* new NoHomeNode({ message: `the database's home ${row.value.home} has not recorded it yet` })
          }
          return { node, at: recorded as NodeEndpoint }
        }
        const at = yield* node.endpoint(projectId).pipe(Effect.catch(nodeUnavailable))
        if (at === undefined) return yield* new NoHomeNode({ message: "no node holds this database" })
        return { node, at }
      })

      /** One generation of the running cluster into the backup store, recorded once the image is whole. */
      const takeGeneration = Effect.fn("Databases.takeGeneration")(function* (projectId: ProjectId, sealing = false) {
        const { node, backups } = yield* Effect.orDie(nodeAdmin)
        return yield* oneGenerationAtATime(projectId).withPermit(
          store.exclusive(
            projectId,
            Effect.gen(function* () {
              const row = yield* required(projectId)
              const existing = yield* store.generations(projectId)
              const seq = Math.max(0, ...existing.filter((g) => g.epoch === row.epoch).map((g) => g.seq)) + 1
              const key = `${projectId}/${row.epoch}-${seq}-${yield* tokens.secret(6)}.tar.gz`
              // The test-only delay holds a sealing backup open (started, its WAL slot taken) for a crash test.
              const pause = sealing ? Effect.sleep(config.sealingDelay) : Effect.void
              const { epoch, written } = yield* node.backup(projectId, (image) =>
                Effect.andThen(pause, backups.put(key, image))
              )
              const generation: GenerationRow = {
                projectId,
                epoch,
                seq: epoch === row.epoch ? seq : 1,
                bytes: written.bytes,
                sha256: written.sha256,
                offsiteKey: key,
                createdAt: yield* nowIso,
                lastCheckedAt: null,
                checkFailedAt: null
              }
              yield* store.addGeneration(generation)
              return generation
            })
          )
        )
      })

      const status = Effect.fn("Databases.status")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, databaseRules.status)
        return { db: Option.isSome(yield* store.find(project.id)) }
      })

      const connectFor = Effect.fnUntraced(function* (row: DatabaseRow) {
        const { node, at } = yield* whereIs(row.projectId)
        return connectOf(row, at, yield* passwordOf(row), node.ownerOf(row.projectId))
      })

      const create = Effect.fn("Databases.create")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, databaseRules.create)
        const { node } = yield* nodeAdmin
        const sealed = yield* sealer.seal(yield* tokens.secret(24), passwordContext(grant.project.id))
        // The record first: a concurrent create keeps the first password, and the node is made from the stored one.
        const row = yield* mutation.project(
          grant,
          ({ project, at }) =>
            Effect.gen(function* () {
              const existing = yield* store.find(project.id)
              if (Option.isSome(existing)) return unaudited(existing.value)
              const row = yield* store.create(project.id, sealed, at, here ?? null)
              return audited(row, { action: "database.create", target: project.id, data: {} })
            }),
          // The node connects `env.db` at its next convergence.
          { node: true }
        )
        // Its home made the cluster (and its baseline): this replica answers where it is.
        if (elsewhere(row)) return yield* connectFor(row)
        const password = yield* passwordOf(row)
        const at = yield* node
          .ensure(row.projectId, yield* node.verifier(Redacted.make(password)))
          .pipe(Effect.catch(nodeUnavailable))
        if (here !== undefined) yield* store.place(row.projectId, here, at)
        // The empty baseline (seq 1) when the database has none yet.
        if ((yield* store.generations(row.projectId)).length === 0) yield* Effect.orDie(takeGeneration(row.projectId))
        return yield* connectFor(row)
      })

      const connect = Effect.fn("Databases.connect")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, databaseRules.connect)
        return yield* connectFor(yield* required(project.id))
      })

      const endpoint = Effect.fn("Databases.endpoint")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, databaseRules.endpoint)
        yield* required(project.id)
        const { at } = yield* whereIs(project.id)
        return { host: at.host, port: at.port, database: "app", sslmode: at.sslmode }
      })

      const listTokens = Effect.fn("Databases.tokens")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, databaseRules.tokens)
        yield* required(project.id)
        return (yield* store.tokens(project.id)).map((token) => ({ user: token.user, createdAt: token.createdAt }))
      })

      const createToken = Effect.fn("Databases.createToken")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, databaseRules.createToken)
        const row = yield* required(grant.project.id)
        const { node } = yield* whereIs(grant.project.id)
        const user = `tok_${(yield* tokens.id("t")).slice(2)}`
        const password = yield* tokens.secret(24)
        const verifier = yield* node.verifier(Redacted.make(password))
        yield* (
          elsewhere(row)
            ? handOver(row, { action: "createToken", user, verifier })
            : node.createToken(grant.project.id, { user, verifier })
        ).pipe(Effect.catch(nodeUnavailable))
        return yield* mutation.project(grant, ({ project, at }) =>
          Effect.gen(function* () {
            yield* required(project.id)
            yield* store.addToken({ projectId: project.id, user, verifier, createdAt: at })
            return audited(
              { user, password, createdAt: at },
              { action: "database.token.create", target: project.id, data: { user } }
            )
          })
        )
      })

      const deleteToken = Effect.fn("Databases.deleteToken")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        user: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, databaseRules.deleteToken)
        const row = yield* required(grant.project.id)
        const known = (yield* store.tokens(grant.project.id)).some((token) => token.user === user)
        if (!known) return yield* new NotFound({ message: `database token ${user} not found` })
        const { node } = yield* whereIs(grant.project.id)
        // The node first: once the call answers, the credential no longer connects.
        yield* (
          elsewhere(row) ? handOver(row, { action: "deleteToken", user }) : node.deleteToken(grant.project.id, user)
        ).pipe(Effect.catch(nodeUnavailable))
        yield* mutation.project(grant, ({ project }) =>
          Effect.gen(function* () {
            if (!(yield* store.removeToken(project.id, user))) {
              return yield* new NotFound({ message: `database token ${user} not found` })
            }
            return audited(undefined, { action: "database.token.delete", target: project.id, data: { user } })
          })
        )
      })

      const exportImage = Effect.fn("Databases.export")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, databaseRules.export)
        const row = yield* required(project.id)
        const { backups } = yield* nodeAdmin
        const deleting = yield* projectDeleting(project)
        if (Option.isSome(deleting)) {
          return yield* new Suspended({
            message: `project ${project.name} is being deleted: its database is suspended`,
            details: deleting.value
          })
        }
        if (row.operationId !== null) {
          return yield* new Suspended({
            message: "the database is suspended while an operation runs",
            details: { operationId: row.operationId }
          })
        }
        const { node } = yield* whereIs(project.id)
        const key = `exports/${project.id}/${(yield* nowIso).replace(/[:.]/g, "-")}-${yield* tokens.secret(6)}.tar.gz`
        yield* (
          elsewhere(row)
            ? handOver(row, { action: "export", key })
            : Effect.asVoid(node.backup(project.id, (image) => backups.put(key, image)))
        ).pipe(
          Effect.catch(
            (error: DatabaseNodeError | BackupStoreError): Effect.Effect<never, NoHomeNode | ExportFailed> =>
              error._tag === "DatabaseNodeError" && error.reason === "unavailable"
                ? Effect.fail(new NoHomeNode({ message: error.message }))
                : Effect.fail(new ExportFailed({ message: `the export failed: ${error.message}` }))
          )
        )
        return { key }
      })

      const generations = Effect.fn("Databases.generations")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string
      ) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, databaseRules.generations)
        return (yield* store.generations(project.id)).map(toGeneration)
      })

      const inProgress = (operationId: string) =>
        new OperationInProgress({
          message: "another operation holds this database",
          details: { operationId }
        })

      const restore = Effect.fn("Databases.restore")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        request: RestoreRequest
      ) {
        // A project being deleted is let through to answer 409 suspended, read again under the org lock.
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, databaseRules.restore)
        yield* required(grant.project.id)
        yield* whereIs(grant.project.id)
        return yield* mutation.project(grant, ({ org, project }) =>
          Effect.gen(function* () {
            const row = yield* required(project.id)
            const deleting = yield* projectDeleting(project)
            if (Option.isSome(deleting)) {
              return yield* new Suspended({
                message: `project ${project.name} is being deleted: its database is suspended`,
                details: deleting.value
              })
            }
            if (row.operationId !== null) return yield* inProgress(row.operationId)
            const listed = yield* store.generations(project.id)
            const chosen = listed.find((g) => g.epoch === request.epoch && g.seq === request.seq)
            if (chosen === undefined) {
              return yield* new NotFound({ message: `no generation ${request.epoch}/${request.seq} is listed` })
            }
            const nextEpoch = Math.max(row.epoch, ...listed.map((g) => g.epoch)) + 1
            const id = makeId("op", yield* tokens.id("op"))
            yield* store.holdFor(project.id, id)
            yield* jobs.enqueue(
              pinFor(row, restoreGeneration),
              { orgId: org.id, projectId: project.id, epoch: chosen.epoch, seq: chosen.seq, nextEpoch },
              { id, key: project.id }
            )
            return audited(
              { operationId: id },
              {
                action: "database.restore",
                target: project.id,
                data: { operationId: id, epoch: chosen.epoch, seq: chosen.seq }
              }
            )
          })
        )
      })

      const remove = Effect.fn("Databases.remove")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        confirm: string
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, databaseRules.remove)
        if (confirm !== grant.project.name) {
          return yield* new ConfirmMismatch({ message: "confirm must equal the project name exactly" })
        }
        return yield* mutation.project(grant, ({ org, project }) =>
          Effect.gen(function* () {
            const row = yield* required(project.id)
            // The project's own delete already takes the database with it.
            const deleting = yield* projectDeleting(project)
            if (Option.isSome(deleting)) {
              return yield* new OperationInProgress({
                message: `project ${project.name} is being deleted, and its database with it`,
                details: deleting.value
              })
            }
            if (row.operationId !== null) return yield* inProgress(row.operationId)
            const id = makeId("op", yield* tokens.id("op"))
            yield* store.holdFor(project.id, id)
            yield* jobs.enqueue(
              pinFor(row, deleteDatabase),
              { orgId: org.id, projectId: project.id },
              { id, key: project.id }
            )
            return audited(
              { operationId: id },
              { action: "database.delete", target: project.id, data: { operationId: id } }
            )
          })
        )
      })

      const databaseOperation = Effect.fnUntraced(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        opId: string,
        rule: typeof databaseRules.operation | typeof databaseRules.abort
      ) {
        const { org, project } = yield* policy.requireProject(actor, orgSlug, projectName, rule)
        const job = yield* jobs.get(opId)
        const found = Option.flatMap(job, (job) =>
          [restoreGeneration.kind, deleteDatabase.kind, rebuildDatabase.kind].includes(baseKind(job.kind))
            ? operationOf(job, org.id)
            : Option.none()
        )
        if (Option.isNone(found) || Option.isNone(job) || found.value.projectId !== project.id) {
          return yield* new NotFound({ message: `operation ${opId} not found` })
        }
        return { ...found.value, jobKind: job.value.kind }
      })

      const operation = Effect.fn("Databases.operation")(
        (actor: Actor, orgSlug: string, projectName: string, opId: string) =>
          Effect.map(
            databaseOperation(actor, orgSlug, projectName, opId, databaseRules.operation),
            ({ jobKind: _, ...operation }) => operation
          )
      )

      const abort = Effect.fn("Databases.abort")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        opId: string
      ) {
        const found = yield* databaseOperation(actor, orgSlug, projectName, opId, databaseRules.abort)
        const definition =
          found.kind === restoreGeneration.kind
            ? restoreGeneration
            : found.kind === rebuildDatabase.kind
              ? rebuildDatabase
              : deleteDatabase
        // The job's own kind: pinned to the database's home when it had one. A rebuild is never abortable.
        if (!(yield* jobs.abort({ ...(definition as typeof deleteDatabase), kind: found.jobKind }, opId))) {
          return yield* new NotAbortable({
            message: "the operation can no longer be aborted",
            details: { phase: found.phase, terminalCode: found.terminalCode }
          })
        }
        const { jobKind: _, ...operation } = yield* databaseOperation(
          actor,
          orgSlug,
          projectName,
          opId,
          databaseRules.abort
        )
        return operation
      })

      const granted = (projectId: ProjectId) => Effect.map(store.find(projectId), Option.isSome)

      const binding = Effect.fn("Databases.binding")(function* (projectId: ProjectId) {
        const row = yield* store.find(projectId)
        if (Option.isNone(row)) return null
        return yield* connectFor(row.value).pipe(Effect.catch(() => Effect.succeed(null)))
      })

      // Times compared as instants: rows' texts need not share one spelling (precision, offset) to compare right.
      const lastBackupAt = (projectId: ProjectId) =>
        Effect.map(store.generations(projectId), (rows) =>
          rows.reduce<{ readonly at: DateTime.Utc; readonly text: string } | null>((latest, row) => {
            const at = DateTime.makeUnsafe(row.createdAt)
            return latest === null || DateTime.isGreaterThan(at, latest.at) ? { at, text: row.createdAt } : latest
          }, null)
        )
      const lastBackup = (projectId: ProjectId) => Effect.map(lastBackupAt(projectId), (latest) => latest?.text ?? null)

      /**
       * Whether this replica holds the database's cluster: its home, or (a database from before homes) found on this
       * node, which then takes it as its home.
       */
      const homedHere = Effect.fnUntraced(function* (row: DatabaseRow) {
        if (here === undefined || row.home === here) return true
        if (row.home !== null || Option.isNone(maybeNode)) return false
        const at = yield* maybeNode.value.endpoint(row.projectId).pipe(Effect.catch(() => Effect.succeed(undefined)))
        return at !== undefined && (yield* store.place(row.projectId, here, at))
      })

      /**
       * A cluster still on this node for a database now homed on another replica (rebuilt there while this replica
       * was silent): it must not serve stale data beside the rebuilt one, so it goes to the tombstone.
       */
      const retireMoved = Effect.fnUntraced(function* (row: DatabaseRow) {
        if (here === undefined || row.home === null || row.home === here || Option.isNone(maybeNode)) return
        const node = maybeNode.value
        // The record may name this replica by now (a rebuild here): it is read again, and only a copy another replica
        // still owns is retired.
        const current = yield* store.find(row.projectId)
        if (Option.isNone(current) || current.value.home === here || current.value.operationId !== null) return
        yield* Effect.logWarning(
          "a database moved to another replica while this one was away: its cluster here is retired",
          {
            projectId: row.projectId,
            home: row.home
          }
        )
        yield* node.remove(row.projectId).pipe(Effect.orDie)
      })

      /**
       * Clusters on this node whose database has no record any more: deleted on another replica while this one was
       * away (a project delete, or a database delete finished elsewhere once this home counted as lost), or left by a
       * crash between a delete's two steps. They go to the tombstone, as the delete would have sent them, instead of
       * serving a database nobody owns. (A record is always written before its cluster is made.)
       */
      const retireOrphans = Effect.gen(function* () {
        if (here === undefined || Option.isNone(maybeNode)) return
        const node = maybeNode.value
        const held = yield* node.held.pipe(Effect.catch(() => Effect.succeed([] as ReadonlyArray<ProjectId>)))
        for (const projectId of held) {
          if (Option.isSome(yield* store.find(projectId))) continue
          yield* Effect.logWarning(
            "a database cluster here has no record any more (deleted elsewhere): it is retired",
            {
              projectId
            }
          )
          yield* node
            .remove(projectId)
            .pipe(Effect.catch((error) => Effect.logWarning("cannot retire a database cluster", { projectId, error })))
        }
      }).pipe(Effect.withSpan("Databases.retireOrphans"))

      // The grid boundary whose generation failed and was notified, per project: one notice per boundary, not per round.
      const failedBoundary = new Map<ProjectId, string>()
      // Databases whose moved cluster is being looked at beside the round (retireMoved).
      const retiring = new Set<ProjectId>()
      const backupDue = Effect.gen(function* () {
        if (Option.isNone(maybeNode) || Option.isNone(maybeBackups)) return
        const interval = Duration.toMillis(config.backupInterval)
        const now = DateTime.toEpochMillis(yield* DateTime.now)
        const boundaryAt = DateTime.makeUnsafe(Math.floor(now / interval) * interval)
        const boundary = DateTime.formatIso(boundaryAt)
        // The node's folders, listed once per round and only when a database homed elsewhere comes up: looked for
        // there, since asking the node's endpoint would start a stale copy.
        let heldHere: ReadonlyArray<ProjectId> | undefined
        const held = Effect.suspend(() =>
          heldHere !== undefined
            ? Effect.succeed(heldHere)
            : maybeNode.value.held.pipe(
                Effect.catch(() => Effect.succeed([] as ReadonlyArray<ProjectId>)),
                Effect.tap((listed) => Effect.sync(() => (heldHere = listed)))
              )
        )
        for (const projectId of yield* store.projects) {
          const row = yield* store.find(projectId)
          if (Option.isNone(row) || row.value.operationId !== null) continue
          // Another replica's database is backed up by that replica's own round: its cluster is not here, unless
          // the database was rebuilt elsewhere while this replica was away.
          if (!(yield* homedHere(row.value))) {
            // Beside the round, one at a time per database: the node may be busy with that cluster for minutes (a
            // rebuild here), and the generations of this replica's own databases must not wait for it.
            if (row.value.home !== null && !retiring.has(projectId) && (yield* held).includes(projectId)) {
              retiring.add(projectId)
              yield* Effect.forkDetach(
                retireMoved(row.value).pipe(
                  Effect.catchCause((cause) =>
                    Effect.logWarning("cannot retire a moved database's cluster", { cause })
                  ),
                  Effect.ensuring(Effect.sync(() => retiring.delete(projectId)))
                )
              )
            }
            continue
          }
          // This replica's own cluster serves again after a restart: the node starts a cluster on its first use only.
          yield* maybeNode.value.endpoint(projectId).pipe(Effect.ignore)
          // A database created within this grid cell gets its baseline from the create itself: the scheduler taking
          // one too, between the record's insert and the baseline, would list two generations for one moment.
          const latest = (yield* lastBackupAt(projectId))?.at ?? DateTime.makeUnsafe(row.value.createdAt)
          if (DateTime.isGreaterThanOrEqualTo(latest, boundaryAt)) continue
          yield* takeGeneration(projectId).pipe(
            Effect.tap(() => Effect.sync(() => failedBoundary.delete(projectId))),
            Effect.catchCause((cause) =>
              Effect.gen(function* () {
                yield* Effect.logWarning("a scheduled generation failed", { projectId, cause })
                if (failedBoundary.get(projectId) === boundary) return
                failedBoundary.set(projectId, boundary)
                yield* notifyAbout(
                  projectId,
                  `database:${projectId}:generation-failed:${boundary}`,
                  "backup",
                  (name) => `The scheduled backup of ${name}'s database failed`,
                  (name) =>
                    `The scheduled generation of the database of project ${name} for ${boundary} failed; it is tried again every few seconds.`
                )
              })
            )
          )
        }
      }).pipe(Effect.withSpan("Databases.backupDue"))

      /** When a home last showed it is alive: its generations round, renewed while it runs and rescheduled after. */
      const lastSeen = Effect.fnUntraced(function* (home: string) {
        const round = yield* jobs.get(`job_${pinned(databaseGenerations, home).kind}`)
        if (Option.isNone(round)) return undefined
        const times = [round.value.updatedAt, round.value.leaseUntil].filter((t): t is string => t !== null)
        return Math.max(...times.map((t) => Date.parse(t)))
      })
      // Homes already warned about, per process: the warning is said once per silence.
      const silentHomes = new Set<string>()

      const ProjectOf = Schema.Struct({ projectId: ProjectId })

      /**
       * Ends an unfinished job pinned to the lost home `from`: it would wait there forever. Handed-over node work is
       * dropped (a call its request still waits for is left to that request's deadline); an operation holding the
       * database lets go of it, so the database is rebuilt here like any other of that home. A database delete is
       * finished here instead (its data is out of reach anyway, and no final safety generation can be sealed), unless
       * its abort was asked for. The admins are told what became of the operation.
       */
      const endLostWork = Effect.fnUntraced(function* (job: JobRow, from: string, reason: string, now: number) {
        const kind = baseKind(job.kind)
        if (kind === databaseNodeCall.kind) {
          const call = Schema.decodeUnknownOption(databaseNodeCall.payload)(job.payload)
          if (Option.isSome(call) && call.value.notAfter !== null && now <= Date.parse(call.value.notAfter)) return
          const ended = yield* jobs.takeOver(job.id, () =>
            Effect.succeed({ code: "failed" as const, error: `not run: ${reason}` })
          )
          if (Option.isSome(ended)) {
            yield* Effect.logWarning("database work handed to a lost home is dropped", {
              jobId: job.id,
              home: from,
              projectId: Option.map(call, (c) => c.projectId).pipe(Option.getOrUndefined),
              action: Option.map(call, (c) => c.action).pipe(Option.getOrUndefined)
            })
          }
          return
        }
        const payload = Schema.decodeUnknownOption(ProjectOf)(job.payload)
        if (Option.isNone(payload)) return
        const { projectId } = payload.value
        const row = yield* store.find(projectId)
        const holding = Option.isSome(row) && row.value.operationId === job.id
        const ended = yield* jobs.takeOver(job.id, (claimed) =>
          Effect.gen(function* () {
            if (kind === deleteDatabase.kind && !claimed.abortRequested && (holding || Option.isNone(row))) {
              // The node state's `db` binding goes at the node's next convergence.
              if (holding) {
                yield* transactor.withTransaction(Effect.andThen(store.remove(projectId), revisions.raise(projectId)))
              }
              return { code: "done" as const, error: `finished on replica ${here}: ${reason}` }
            }
            if (holding) yield* store.holdFor(projectId, null)
            return claimed.abortRequested
              ? { code: "aborted" as const, error: reason }
              : { code: "failed" as const, error: reason }
          })
        )
        if (Option.isNone(ended)) return
        yield* Effect.logWarning("an operation pinned to a lost database home is ended here", {
          operationId: job.id,
          kind,
          home: from,
          projectId,
          terminalCode: ended.value
        })
        const what = kind === deleteDatabase.kind ? "delete" : kind === rebuildDatabase.kind ? "rebuild" : "restore"
        const notice = (subject: (name: string) => string, message: (name: string) => string) =>
          notifyAbout(
            projectId,
            `operation:${job.id}`,
            kind === deleteDatabase.kind ? "backup" : "restore",
            subject,
            message
          )
        if (ended.value === "done") {
          const [last] = yield* store.generations(projectId)
          yield* notice(
            (name) => `The database of ${name} was deleted`,
            (name) =>
              `The database of project ${name} was deleted. The replica holding it stopped answering, so the delete was finished on another replica without a final safety generation` +
              (last === undefined ? "" : `; generation ${last.epoch}/${last.seq} of ${last.createdAt} stays listed`) +
              "."
          )
        } else {
          const rebuilt = holding ? " The database is rebuilt on another replica from its newest generation." : ""
          yield* notice(
            (name) =>
              ended.value === "aborted"
                ? `The ${what} of ${name}'s database was aborted`
                : `The ${what} of ${name}'s database could not finish`,
            (name) =>
              `The ${what} of the database of project ${name} ${ended.value === "aborted" ? "was aborted" : "could not finish"}: the replica running it stopped answering.` +
              rebuilt
          )
        }
      })

      /**
       * Databases whose home has been silent past `homeLostAfter` move here and are rebuilt from their newest sound
       * generation (a `restore` operation pinned here); a silent home is warned about first. The work pinned to a lost
       * home is ended first (`endLostWork`), so a database held by one of its operations moves too. One whose project
       * is being deleted stays: the delete takes it.
       */
      const adoptLost = Effect.gen(function* () {
        const lostAfter = config.homeLostAfter
        if (here === undefined || lostAfter === null || Option.isNone(maybeBackups)) return
        const now = DateTime.toEpochMillis(yield* DateTime.now)
        const verdicts = new Map<string, boolean>()
        const isLost = Effect.fnUntraced(function* (from: string) {
          const known = verdicts.get(from)
          if (known !== undefined) return known
          const seen = yield* lastSeen(from)
          const silence = seen === undefined ? 0 : now - seen
          const lost = silence > Duration.toMillis(lostAfter)
          verdicts.set(from, lost)
          if (silence > Duration.toMillis(Duration.minutes(1)) && !lost && !silentHomes.has(from)) {
            silentHomes.add(from)
            yield* Effect.logWarning("a database home is silent: its databases are rebuilt elsewhere if it stays so", {
              home: from,
              lastSeen: new Date(seen!).toISOString(),
              lostAfter: Duration.format(lostAfter)
            })
          }
          if (silence <= Duration.toMillis(Duration.minutes(1))) silentHomes.delete(from)
          return lost
        })

        const reason = (from: string) =>
          `its replica ${from} has not answered for more than ${Duration.format(lostAfter)}`
        const pending = [
          ...(yield* jobs.unfinishedPinned(restoreGeneration, 100)),
          ...(yield* jobs.unfinishedPinned(deleteDatabase, 100)),
          ...(yield* jobs.unfinishedPinned(rebuildDatabase, 100)),
          ...(yield* jobs.unfinishedPinned(databaseNodeCall, 100))
        ]
        for (const job of pending) {
          const from = job.kind.slice(job.kind.indexOf("@") + 1)
          if (from === here || !(yield* isLost(from))) continue
          yield* endLostWork(job, from, reason(from), now)
        }

        for (const projectId of yield* store.projects) {
          const row = yield* store.find(projectId)
          if (Option.isNone(row) || row.value.home === null || row.value.home === here) continue
          const from = row.value.home
          if (!(yield* isLost(from)) || row.value.operationId !== null) continue
          const project = yield* projects.findById(projectId)
          if (Option.isNone(project) || project.value.deletingSince !== null) continue
          const listed = yield* store.generations(projectId)
          if (!listed.some((g) => g.checkFailedAt === null)) {
            yield* Effect.logError("a database's home is lost and it has no sound generation to rebuild it from", {
              projectId,
              home: from
            })
            continue
          }
          const nextEpoch = Math.max(row.value.epoch, ...listed.map((g) => g.epoch)) + 1
          const id = makeId("op", yield* tokens.id("op"))
          const moved = yield* transactor.withTransaction(
            Effect.gen(function* () {
              if (!(yield* store.move(projectId, from, here, id))) return false
              yield* jobs.enqueue(
                pinned(rebuildDatabase, here),
                { orgId: project.value.orgId, projectId, from, nextEpoch },
                { id, key: projectId }
              )
              yield* revisions.raise(projectId)
              return true
            })
          )
          if (moved) {
            yield* Effect.logWarning(
              "a database home is lost: its database is rebuilt here from its newest generation",
              {
                projectId,
                home: from,
                operationId: id
              }
            )
          }
        }
      }).pipe(Effect.withSpan("Databases.adoptLost"))

      const checkDue = Effect.gen(function* () {
        if (Option.isNone(maybeBackups)) return
        const backups = maybeBackups.value
        const before = DateTime.subtract(yield* DateTime.now, { milliseconds: Duration.toMillis(config.checkInterval) })
        for (const projectId of yield* store.projects) {
          for (const generation of yield* store.generations(projectId)) {
            if (
              generation.lastCheckedAt !== null &&
              DateTime.isGreaterThan(DateTime.makeUnsafe(generation.lastCheckedAt), before)
            ) {
              continue
            }
            const digest = yield* backups
              .digest(generation.offsiteKey)
              .pipe(Effect.catch(() => Effect.succeed(undefined)))
            const ok = digest !== undefined && digest.sha256 === generation.sha256 && digest.bytes === generation.bytes
            if (!ok)
              yield* Effect.logError("a stored generation no longer matches its digest", {
                projectId,
                epoch: generation.epoch,
                seq: generation.seq
              })
            // Told once: the generation keeps its failed mark, and later rounds find it failed already. The notice
            // comes before the mark, so a crash between them tells it again, once (its key), and never loses it.
            if (!ok && generation.checkFailedAt === null) {
              yield* notifyAbout(
                projectId,
                `database:${projectId}:generation-damaged:${generation.offsiteKey}`,
                "backup",
                (name) => `A backup of ${name}'s database is damaged`,
                (name) =>
                  `Generation ${generation.epoch}/${generation.seq} of the database of project ${name} no longer matches its sha256 ${generation.sha256}; it will not be restored.`
              )
            }
            yield* store.checked(projectId, generation.epoch, generation.seq, yield* nowIso, ok)
          }
        }
      }).pipe(Effect.withSpan("Databases.checkDue"))

      const teardown = Effect.fn("Databases.teardown")(function* (
        projectId: ProjectId,
        part: "drain" | "node" | "backups"
      ) {
        const row = yield* store.find(projectId)
        if (part !== "backups" && Option.isSome(row) && elsewhere(row.value)) {
          // Its home drains and removes the cluster, as soon as its runner takes the job; the delete goes on meanwhile.
          yield* handOver(row.value, { action: part === "drain" ? "drain" : "remove" }, false).pipe(Effect.orDie)
          if (part === "node") yield* store.remove(projectId)
          return
        }
        if (part === "drain") {
          // A node that no longer holds the database has nothing to drain.
          if (Option.isNone(maybeNode) || Option.isNone(row)) return
          yield* maybeNode.value
            .drain(projectId)
            .pipe(Effect.catch((error) => (error.reason === "unavailable" ? Effect.void : Effect.die(error))))
          return
        }
        if (part === "node") {
          if (Option.isSome(maybeNode)) yield* maybeNode.value.remove(projectId).pipe(Effect.orDie)
          yield* store.remove(projectId)
          return
        }
        if (Option.isSome(maybeBackups)) {
          for (const generation of yield* store.generations(projectId)) {
            yield* maybeBackups.value.remove(generation.offsiteKey).pipe(Effect.orDie)
          }
        }
        yield* store.removeGenerations(projectId)
      })

      // The operations' phases: each one idempotent, since a crash repeats the phase that was running.
      const failure = (error: { readonly message: string }) =>
        new JobFailure({ message: error.message, retryable: true })
      // A database whose project's delete was accepted stays suspended: an operation ending meanwhile leaves it drained.
      const projectGoing = (projectId: ProjectId) =>
        Effect.map(
          projects.findById(projectId),
          (project) => Option.isNone(project) || project.value.deletingSince !== null
        )
      const release = (projectId: ProjectId) =>
        Effect.gen(function* () {
          if (Option.isSome(maybeNode) && !(yield* projectGoing(projectId))) {
            yield* maybeNode.value.resume(projectId).pipe(Effect.ignore)
          }
          yield* store.holdFor(projectId, null)
        })

      const restoreHandler = handler(restoreGeneration, {
        run: (phase, job) =>
          Effect.gen(function* () {
            const { node, backups } = yield* nodeAdmin.pipe(Effect.mapError(failure))
            const { projectId, epoch, seq, nextEpoch } = job.payload
            // The project's delete takes the database with it: a restore phase that has not run yet never runs (its
            // committing, after the delete's data phase, would bring back a cluster for a deleted project).
            if (phase !== "reactivation" && (yield* projectGoing(projectId))) {
              return yield* new JobFailure({ message: "the project is being deleted", retryable: false })
            }
            const chosen = (yield* store.generations(projectId)).find((g) => g.epoch === epoch && g.seq === seq)
            if (chosen === undefined)
              return yield* new JobFailure({ message: "the generation is gone", retryable: false })
            if (phase === "draining") {
              // The image is re-hashed before anything changes: a corrupted file is never restored.
              const digest = yield* backups.digest(chosen.offsiteKey).pipe(Effect.mapError(failure))
              if (digest === undefined || digest.sha256 !== chosen.sha256) {
                yield* store.checked(projectId, epoch, seq, yield* nowIso, false)
                return yield* new JobFailure({ message: "the generation does not match its digest", retryable: false })
              }
              yield* node.drain(projectId).pipe(Effect.mapError(failure))
            } else if (phase === "sealing") {
              yield* takeGeneration(projectId, true).pipe(Effect.mapError(failure))
            } else if (phase === "committing") {
              yield* node.restore(projectId, backups.read(chosen.offsiteKey), nextEpoch).pipe(Effect.mapError(failure))
              // The image brings back the tokens of its time: the node keeps exactly today's.
              yield* node.syncTokens(projectId, yield* store.tokens(projectId)).pipe(Effect.mapError(failure))
              yield* store.setEpoch(projectId, nextEpoch)
            } else if (phase === "reactivation") {
              if (!(yield* projectGoing(projectId))) yield* node.resume(projectId).pipe(Effect.mapError(failure))
              yield* store.holdFor(projectId, null)
              // Newest first: the newest generation before the new epoch is the one sealing took.
              const sealed = (yield* store.generations(projectId)).find((g) => g.epoch < nextEpoch)
              yield* notifyAbout(
                projectId,
                `operation:${job.id}`,
                "restore",
                (name) => `The database of ${name} was restored`,
                (name) =>
                  `The database of project ${name} was restored to generation ${epoch}/${seq} and now runs on epoch ${nextEpoch}.` +
                  (sealed === undefined
                    ? ""
                    : ` Its state before the restore is kept as generation ${sealed.epoch}/${sealed.seq}.`)
              )
            }
          }),
        onAbort: (job) =>
          Effect.andThen(
            release(job.payload.projectId),
            notifyAbout(
              job.payload.projectId,
              `operation:${job.id}`,
              "restore",
              (name) => `The restore of ${name}'s database was aborted`,
              (name) =>
                `The restore of the database of project ${name} to generation ${job.payload.epoch}/${job.payload.seq} was aborted before committing; the database is unchanged and takes connections again.`
            )
          ),
        onFailed: (job, error) =>
          Effect.andThen(
            release(job.payload.projectId),
            notifyAbout(
              job.payload.projectId,
              `operation:${job.id}`,
              "restore",
              (name) => `The restore of ${name}'s database failed`,
              (name) =>
                `The restore of the database of project ${name} to generation ${job.payload.epoch}/${job.payload.seq} failed (${error}); the database takes connections again.`
            )
          )
      })

      const deleteHandler = handler(deleteDatabase, {
        run: (phase, job) =>
          Effect.gen(function* () {
            const { node } = yield* nodeAdmin.pipe(Effect.mapError(failure))
            const { projectId } = job.payload
            // A repeated committing finds the record gone and still moves the cluster to the tombstone.
            const present = Option.isSome(yield* store.find(projectId))
            if (phase === "draining" && present) yield* node.drain(projectId).pipe(Effect.mapError(failure))
            else if (phase === "sealing" && present)
              yield* takeGeneration(projectId, true).pipe(Effect.mapError(failure))
            else if (phase === "committing") {
              // The node drops `env.db` at its next convergence.
              yield* transactor.withTransaction(Effect.andThen(store.remove(projectId), revisions.raise(projectId)))
              yield* node.remove(projectId).pipe(Effect.mapError(failure))
              const [last] = yield* store.generations(projectId)
              yield* notifyAbout(
                projectId,
                `operation:${job.id}`,
                "backup",
                (name) => `The database of ${name} was deleted`,
                (name) =>
                  `The database of project ${name} was deleted; its final safety generation ${last === undefined ? "" : `${last.epoch}/${last.seq} `}stays listed.`
              )
            }
          }),
        onAbort: (job) => release(job.payload.projectId),
        onFailed: (job) => release(job.payload.projectId)
      })

      // With homes, each replica's own pinned round takes its generations; the shared round only re-hashes.
      const scheduleHandler = handler(
        { ...databaseSchedule, every: config.roundEvery },
        {
          run: (phase) => (phase === "generations" ? (here === undefined ? backupDue : adoptLost) : checkDue)
        }
      )

      const purgeHandler = handler(databaseNodePurge, {
        run: () =>
          Effect.flatMap(jobs.purgeFinished(databaseNodeCall, Duration.minutes(10)), (removed) =>
            removed > 0 ? Effect.logInfo("finished handed-over database work purged", { rows: removed }) : Effect.void
          )
      })

      /** Node work handed over by another replica, run here on the cluster this node holds. */
      const nodeCall = (call: NodeCallPayload) =>
        Effect.gen(function* () {
          const { node, backups } = yield* nodeAdmin.pipe(Effect.mapError(failure))
          if (call.notAfter !== null && DateTime.toEpochMillis(yield* DateTime.now) > Date.parse(call.notAfter)) {
            return yield* new JobFailure({ message: "too late: the request was answered already", retryable: false })
          }
          const { projectId } = call
          const nodeFailure = (error: DatabaseNodeError | BackupStoreError) =>
            new JobFailure({
              message: error.message,
              retryable: error._tag !== "DatabaseNodeError" || error.reason === "failed"
            })
          if (call.action === "drain")
            yield* node
              .drain(projectId)
              .pipe(
                Effect.catch((error) =>
                  error.reason === "unavailable" ? Effect.void : Effect.fail(nodeFailure(error))
                )
              )
          else if (call.action === "remove") yield* node.remove(projectId).pipe(Effect.mapError(nodeFailure))
          else if (call.action === "createToken") {
            yield* node
              .createToken(projectId, { user: call.user ?? "", verifier: call.verifier ?? "" })
              .pipe(Effect.mapError(nodeFailure))
          } else if (call.action === "deleteToken") {
            yield* node.deleteToken(projectId, call.user ?? "").pipe(Effect.mapError(nodeFailure))
          } else {
            yield* node
              .backup(projectId, (image) => backups.put(call.key ?? "", image))
              .pipe(Effect.mapError(nodeFailure))
          }
        })

      /** The newest generation that passed every check, at or before `beforeEpoch` (newest first: epoch, then seq). */
      const newestSound = (projectId: ProjectId, beforeEpoch: number) =>
        Effect.map(store.generations(projectId), (rows) =>
          rows.find((g) => g.checkFailedAt === null && g.epoch < beforeEpoch)
        )

      const rebuildHandler = handler(rebuildDatabase, {
        run: (phase, job) =>
          Effect.gen(function* () {
            const { node, backups } = yield* nodeAdmin.pipe(Effect.mapError(failure))
            const { projectId, nextEpoch } = job.payload
            if (phase !== "reactivation" && (yield* projectGoing(projectId))) {
              return yield* new JobFailure({ message: "the project is being deleted", retryable: false })
            }
            const row = yield* store.find(projectId)
            if (Option.isNone(row)) return yield* new JobFailure({ message: "the database is gone", retryable: false })
            if (phase === "placing") {
              // An empty cluster to restore into, refusing connections until the image is in place.
              const verifier = yield* node.verifier(Redacted.make(yield* passwordOf(row.value)))
              yield* node.ensure(projectId, verifier).pipe(Effect.mapError(failure))
              yield* node.drain(projectId).pipe(Effect.mapError(failure))
            } else if (phase === "restoring") {
              // The newest generation whose image still matches its digest; a damaged one is marked and passed over.
              let chosen = yield* newestSound(projectId, nextEpoch)
              while (chosen !== undefined) {
                const digest = yield* backups.digest(chosen.offsiteKey).pipe(Effect.mapError(failure))
                if (digest !== undefined && digest.sha256 === chosen.sha256) break
                yield* store.checked(projectId, chosen.epoch, chosen.seq, yield* nowIso, false)
                chosen = yield* newestSound(projectId, nextEpoch)
              }
              if (chosen === undefined) {
                return yield* new JobFailure({ message: "no sound generation is left", retryable: false })
              }
              yield* node.restore(projectId, backups.read(chosen.offsiteKey), nextEpoch).pipe(Effect.mapError(failure))
              yield* node.drain(projectId).pipe(Effect.mapError(failure))
              yield* node.syncTokens(projectId, yield* store.tokens(projectId)).pipe(Effect.mapError(failure))
              const at = yield* node.endpoint(projectId).pipe(Effect.mapError(failure))
              yield* transactor.withTransaction(
                Effect.gen(function* () {
                  yield* store.setEpoch(projectId, nextEpoch)
                  if (here !== undefined) yield* store.place(projectId, here, at ?? null)
                  // The node state's `db` binding now names this replica's endpoint.
                  yield* revisions.raise(projectId)
                })
              )
            } else {
              if (!(yield* projectGoing(projectId))) yield* node.resume(projectId).pipe(Effect.mapError(failure))
              yield* store.holdFor(projectId, null)
              const used = yield* newestSound(projectId, nextEpoch)
              yield* notifyAbout(
                projectId,
                `operation:${job.id}`,
                "restore",
                (name) => `The database of ${name} was rebuilt on another replica`,
                (name) =>
                  `The replica holding the database of project ${name} stopped answering, so the database was rebuilt on another replica` +
                  (used === undefined
                    ? ""
                    : ` from generation ${used.epoch}/${used.seq} of ${used.createdAt}; writes after that time are lost`) +
                  `. It now runs on epoch ${nextEpoch}.`
              )
            }
          }),
        // No sound image: the record is let go, the empty cluster keeps refusing connections, the admins are told.
        onFailed: (job, error) =>
          Effect.andThen(
            store.holdFor(job.payload.projectId, null),
            notifyAbout(
              job.payload.projectId,
              `operation:${job.id}`,
              "restore",
              (name) => `The database of ${name} could not be rebuilt`,
              (name) =>
                `The replica holding the database of project ${name} stopped answering, and rebuilding the database on another replica failed (${error}); it refuses connections until an operator restores it.`
            )
          )
      })

      // The kinds pinned to this replica's home: the operations on its databases, their generations, handed-over work.
      const pinnedHandlers: ReadonlyArray<JobHandler> =
        here === undefined
          ? []
          : [
              { ...restoreHandler, definition: pinned(restoreGeneration, here) },
              { ...deleteHandler, definition: pinned(deleteDatabase, here) },
              handler(
                { ...pinned(databaseGenerations, here), every: config.roundEvery },
                { run: () => Effect.andThen(backupDue, retireOrphans) }
              ),
              handler(pinned(databaseNodeCall, here), { run: (_phase, job) => nodeCall(job.payload) }),
              { ...rebuildHandler, definition: pinned(rebuildDatabase, here) }
            ]

      return Databases.of({
        status,
        create,
        connect,
        endpoint,
        tokens: listTokens,
        createToken,
        deleteToken,
        exportImage,
        generations,
        restore,
        remove,
        operation: (actor, orgSlug, projectName, opId) => operation(actor, orgSlug, projectName, opId),
        abort,
        granted,
        binding,
        lastBackup,
        backupDue,
        checkDue,
        teardown,
        handlers: [restoreHandler, deleteHandler, scheduleHandler, purgeHandler, ...pinnedHandlers]
      })
    })
  )
}
