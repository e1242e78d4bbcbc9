import { Context, Effect, Layer, Option, type Scope, type Stream } from "effect"
import {
  BadRequest,
  Forbidden,
  type GitUnavailable,
  type GitUnreachable,
  NoPath,
  NoRef,
  NotFound,
  type OpInFlight,
  type RepoExists,
  Unauthorized
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { EnvelopeStore } from "../kernel/EnvelopeStore.ts"
import type { Role } from "../kernel/Role.ts"
import { newId, type UserId } from "../kernel/Ids.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { allows, type ProjectRule } from "../kernel/Rule.ts"
import { Settings } from "../kernel/Settings.ts"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { GitConfig } from "./GitConfig.ts"
import { type GitProcess, type GitRefused, type GitRun, GitStorage } from "./GitStorage.ts"
import {
  binarySniffBytes,
  type Commit,
  type CreateRepoInput,
  isBrowseRef,
  maxBlobBytes,
  maxCommits,
  maxRefUpdates,
  maxTreeEntries,
  type PatchRepoInput,
  pathSegments,
  type RefChange,
  type RefUpdate,
  type Repo,
  type RepoBlob,
  type RepoRefs,
  type RepoRow,
  type RepoTree
} from "./Repo.ts"
import { RepoStore } from "./RepoStore.ts"
import { repoRules, transportRules } from "./RepoRules.ts"
import { Deployments } from "../deployments/Deployments.ts"
import { UserStore } from "../identity/UserStore.ts"

/** Where a repo lives in the URL space: `<org>/<project>/<repo>`. */
export interface RepoPath {
  readonly orgSlug: string
  readonly projectName: string
  readonly repoName: string
}

export type GitAccess = "read" | "write"

/** A transport request let through: the repo and who acts (null: an anonymous read of a public repo). */
export interface TransportGrant {
  readonly repo: RepoRow
  readonly userId: UserId | null
  readonly path: RepoPath
}

type Found = NotFound | Forbidden

/**
 * Git repositories of spec 4.12: records (the bare repository is made on first use, stored by id), browsing through
 * git itself, the ref history of every push, and the one authorization rule both transports apply (read: viewer,
 * push: member, a public repo readable by anyone).
 */
export class Repos extends Context.Service<
  Repos,
  {
    readonly list: (actor: Actor, orgSlug: string, projectName: string) => Effect.Effect<ReadonlyArray<Repo>, Found>
    readonly create: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      input: CreateRepoInput
    ) => Effect.Effect<Repo, Found | OpInFlight | RepoExists>
    readonly get: (actor: Actor, path: RepoPath) => Effect.Effect<Repo, Found>
    readonly update: (
      actor: Actor,
      path: RepoPath,
      input: PatchRepoInput
    ) => Effect.Effect<void, Found | OpInFlight | RepoExists | GitUnavailable | GitUnreachable>
    readonly remove: (actor: Actor, path: RepoPath) => Effect.Effect<void, Found | OpInFlight>
    readonly refUpdates: (actor: Actor, path: RepoPath) => Effect.Effect<ReadonlyArray<RefUpdate>, Found>
    readonly refs: (actor: Actor, path: RepoPath) => Effect.Effect<RepoRefs, Found | GitUnavailable | GitUnreachable>
    readonly tree: (
      actor: Actor,
      path: RepoPath,
      query: { readonly ref?: string | undefined; readonly path?: string | undefined }
    ) => Effect.Effect<RepoTree, Found | NoRef | NoPath | GitUnavailable | GitUnreachable>
    readonly blob: (
      actor: Actor,
      path: RepoPath,
      query: { readonly ref?: string | undefined; readonly path?: string | undefined }
    ) => Effect.Effect<RepoBlob, Found | NoRef | NoPath | GitUnavailable | GitUnreachable>
    readonly commits: (
      actor: Actor,
      path: RepoPath,
      query: { readonly ref?: string | undefined; readonly limit?: number | undefined }
    ) => Effect.Effect<ReadonlyArray<Commit>, Found | NoRef | BadRequest | GitUnavailable | GitUnreachable>
    /**
     * The transport rule (decisions.md part 11): no credentials on anything but a public read is 401 (an unknown
     * repo too, so its existence stays hidden); an outsider is 404; a role below viewer (read) or member (push) 403.
     */
    readonly authorizeTransport: (
      userId: UserId | null,
      path: RepoPath,
      access: GitAccess
    ) => Effect.Effect<TransportGrant, Unauthorized | NotFound | Forbidden>
    /** Runs a transport service for a granted request; a push's ref changes are recorded with the pusher. */
    readonly serve: (
      grant: TransportGrant,
      run: GitRun,
      input: Stream.Stream<Uint8Array, unknown>
    ) => Effect.Effect<GitProcess, GitUnavailable | GitUnreachable | GitRefused, Scope.Scope>
  }
>()("@hostplane/core/git/Repos") {
  static readonly layer = Layer.effect(
    Repos,
    Effect.gen(function* () {
      const store = yield* RepoStore
      const storage = yield* GitStorage
      const policy = yield* Policy
      const mutation = yield* Mutation
      const tokens = yield* Tokens
      const orgs = yield* OrgStore
      const projects = yield* ProjectStore
      const settings = yield* Settings
      const config = yield* GitConfig
      const users = yield* UserStore
      const envelopes = yield* EnvelopeStore
      // The deployments area comes before this one in the registry, so its service is always here.
      const deployments = yield* Deployments

      const toRepo = (orgSlug: string, projectName: string, row: RepoRow): Repo => {
        const path = `${orgSlug}/${projectName}/${row.name}.git`
        // An IPv6 host is bracketed in both forms; the public URL's hostname already is (`[::1]`).
        const host =
          config.sshHost.includes(":") && !config.sshHost.startsWith("[") ? `[${config.sshHost}]` : config.sshHost
        const ssh = config.sshPort === 22 ? `git@${host}:${path}` : `ssh://git@${host}:${config.sshPort}/${path}`
        return {
          name: row.name,
          visibility: row.visibility,
          defaultBranch: row.defaultBranch,
          deployOnPush: row.deployOnPush,
          createdAt: row.createdAt,
          cloneUrl: `${settings.publicUrl}/git/${path}`,
          sshUrl: ssh
        }
      }

      const repoNotFound = (name: string) => new NotFound({ message: `repository ${name} not found` })

      /** The repo of a path for a caller the operation's rule lets read it: 404 for an outsider or a missing name. */
      const visible = Effect.fnUntraced(function* (actor: Actor, path: RepoPath, rule: ProjectRule) {
        const access = yield* policy.requireProject(actor, path.orgSlug, path.projectName, rule)
        const repo = yield* store.findByName(access.project.id, path.repoName)
        if (Option.isNone(repo)) return yield* repoNotFound(path.repoName)
        return { ...access, repo: repo.value }
      })

      const list = Effect.fn("Repos.list")(function* (actor: Actor, orgSlug: string, projectName: string) {
        const { org, project } = yield* policy.requireProject(actor, orgSlug, projectName, repoRules.list)
        return (yield* store.list(project.id)).map((row) => toRepo(org.slug, project.name, row))
      })

      const create = Effect.fn("Repos.create")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        input: CreateRepoInput
      ) {
        const grant = yield* mutation.authorizeProject(actor, orgSlug, projectName, repoRules.create)
        const id = yield* newId(tokens, "repo")
        return yield* mutation.project(grant, ({ org, project, at }) =>
          Effect.gen(function* () {
            const row: RepoRow = {
              id,
              orgId: org.id,
              projectId: project.id,
              name: input.name,
              visibility: input.visibility ?? "private",
              defaultBranch: input.defaultBranch ?? "main",
              deployOnPush: false,
              createdAt: at,
              deletedAt: null
            }
            yield* store.insert(row)
            return audited(toRepo(org.slug, project.name, row), {
              action: "repo.create",
              target: project.id,
              data: { repoId: id, name: row.name, visibility: row.visibility }
            })
          })
        )
      })

      const get = Effect.fn("Repos.get")(function* (actor: Actor, path: RepoPath) {
        const { org, project, repo } = yield* visible(actor, path, repoRules.get)
        return toRepo(org.slug, project.name, repo)
      })

      const update = Effect.fn("Repos.update")(function* (actor: Actor, path: RepoPath, input: PatchRepoInput) {
        const grant = yield* mutation.authorizeProject(actor, path.orgSlug, path.projectName, repoRules.update)
        yield* mutation.project(grant, ({ project }) =>
          Effect.gen(function* () {
            const repo = yield* store.findByName(project.id, path.repoName)
            if (Option.isNone(repo)) return yield* repoNotFound(path.repoName)
            const next = {
              name: input.name ?? repo.value.name,
              visibility: input.visibility ?? repo.value.visibility,
              defaultBranch: input.defaultBranch ?? repo.value.defaultBranch,
              deployOnPush: input.deployOnPush ?? repo.value.deployOnPush
            }
            yield* store.update(repo.value.id, next)
            // HEAD moves inside the write: storage that cannot move it (503) leaves the record as it was, and a
            // repeated PATCH of the same branch moves it again, so HEAD and `defaultBranch` never disagree.
            if (input.defaultBranch !== undefined) yield* storage.setHead(repo.value.id, input.defaultBranch)
            const changed = Object.fromEntries(
              Object.entries(next).filter(([key, value]) => repo.value[key as keyof typeof next] !== value)
            )
            return audited(undefined, {
              action: "repo.update",
              target: project.id,
              data: { repoId: repo.value.id, name: next.name, changed }
            })
          })
        )
      })

      const remove = Effect.fn("Repos.remove")(function* (actor: Actor, path: RepoPath) {
        const grant = yield* mutation.authorizeProject(actor, path.orgSlug, path.projectName, repoRules.remove)
        yield* mutation.project(grant, ({ project, at }) =>
          Effect.gen(function* () {
            const repo = yield* store.findByName(project.id, path.repoName)
            if (Option.isNone(repo)) return yield* repoNotFound(path.repoName)
            yield* store.softDelete(repo.value.id, at)
            return audited(undefined, {
              action: "repo.delete",
              target: project.id,
              data: { repoId: repo.value.id, name: repo.value.name }
            })
          })
        )
      })

      const refUpdates = Effect.fn("Repos.refUpdates")(function* (actor: Actor, path: RepoPath) {
        const { repo } = yield* visible(actor, path, repoRules.refUpdates)
        return yield* store.listRefUpdates(repo.id, maxRefUpdates)
      })

      const refs = Effect.fn("Repos.refs")(function* (actor: Actor, path: RepoPath) {
        const { repo } = yield* visible(actor, path, repoRules.refs)
        return yield* storage.refs(repo.id, repo.defaultBranch)
      })

      /** The commit a browse `ref` names (the default branch when empty). */
      const commitOf = Effect.fnUntraced(function* (repo: RepoRow, ref: string | undefined) {
        const name = ref === undefined || ref === "" ? repo.defaultBranch : ref
        const commit = isBrowseRef(name) ? yield* storage.resolve(repo.id, name) : Option.none()
        if (Option.isNone(commit)) return yield* new NoRef({ message: `no ref ${name}` })
        return { name, commit: commit.value }
      })

      const entryAt = Effect.fnUntraced(function* (repo: RepoRow, commit: string, path: string | undefined) {
        const segments = pathSegments(path ?? "")
        const entry = segments === undefined ? Option.none() : yield* storage.entry(repo.id, commit, segments)
        if (Option.isNone(entry) || segments === undefined) {
          return yield* new NoPath({ message: `no path ${path ?? ""}` })
        }
        return { segments, entry: entry.value }
      })

      const tree = Effect.fn("Repos.tree")(function* (
        actor: Actor,
        path: RepoPath,
        query: { readonly ref?: string | undefined; readonly path?: string | undefined }
      ) {
        const { repo } = yield* visible(actor, path, repoRules.tree)
        const { name, commit } = yield* commitOf(repo, query.ref)
        const { segments, entry } = yield* entryAt(repo, commit, query.path)
        if (entry.type !== "tree") return yield* new NoPath({ message: `${query.path} is not a directory` })
        const listing = yield* storage.tree(repo.id, entry.oid, maxTreeEntries)
        const prefix = segments.join("/")
        return {
          ref: name,
          commit,
          path: prefix,
          entries: listing.entries.map((item) => ({
            name: item.name,
            path: prefix === "" ? item.name : `${prefix}/${item.name}`,
            type: item.type,
            mode: item.mode,
            size: item.size
          })),
          truncated: listing.truncated
        }
      })

      const blob = Effect.fn("Repos.blob")(function* (
        actor: Actor,
        path: RepoPath,
        query: { readonly ref?: string | undefined; readonly path?: string | undefined }
      ) {
        const { repo } = yield* visible(actor, path, repoRules.blob)
        const { name, commit } = yield* commitOf(repo, query.ref)
        const { segments, entry } = yield* entryAt(repo, commit, query.path)
        if (entry.type !== "blob") return yield* new NoPath({ message: `${query.path ?? ""} is not a file` })
        const { size, content } = yield* storage.blob(repo.id, entry.oid, maxBlobBytes)
        const binary = content !== null && content.subarray(0, binarySniffBytes).includes(0)
        return {
          ref: name,
          path: segments.join("/"),
          size,
          binary,
          tooLarge: content === null,
          content: content === null || binary ? null : new TextDecoder().decode(content)
        }
      })

      const commits = Effect.fn("Repos.commits")(function* (
        actor: Actor,
        path: RepoPath,
        query: { readonly ref?: string | undefined; readonly limit?: number | undefined }
      ) {
        const { repo } = yield* visible(actor, path, repoRules.commits)
        const limit = query.limit ?? maxCommits
        if (!Number.isInteger(limit) || limit < 1) {
          return yield* new BadRequest({ message: "limit must be an integer of at least 1" })
        }
        const { commit } = yield* commitOf(repo, query.ref)
        return yield* storage.log(repo.id, commit, Math.min(limit, maxCommits))
      })

      const authorizeTransport = Effect.fn("Repos.authorizeTransport")(function* (
        userId: UserId | null,
        path: RepoPath,
        access: GitAccess
      ) {
        const hidden = () =>
          userId === null ? new Unauthorized({ message: "sign in with an access token" }) : repoNotFound(path.repoName)
        // A signed-in request reads the org, its project and the user's role in one round trip (every request of a
        // clone is one of these, three or four per clone): the repo is the only other lookup.
        const read =
          userId === null
            ? yield* Effect.flatMap(orgs.findBySlug(path.orgSlug), (org) =>
                Effect.map(
                  Option.isSome(org)
                    ? projects.findByName(org.value.id, path.projectName)
                    : Effect.succeed(Option.none()),
                  (project) => ({ org, project, role: Option.none<Role>() })
                )
              )
            : yield* envelopes.access(path.orgSlug, userId, path.projectName)
        if (Option.isNone(read.org) || Option.isNone(read.project)) return yield* hidden()
        const repo = yield* store.findByName(read.project.value.id, path.repoName)
        if (Option.isNone(repo)) return yield* hidden()
        const publicRead = repo.value.visibility === "public" && access === "read"
        if (publicRead) return { repo: repo.value, userId, path }
        if (userId === null) return yield* hidden()
        const role = read.role
        if (Option.isNone(role)) {
          if (repo.value.visibility === "public") return yield* new Forbidden({ message: "only members may push" })
          return yield* hidden()
        }
        const rule = transportRules[access]
        if (!allows(rule, role.value)) {
          return yield* new Forbidden({ message: `this needs the ${rule.minimum} role or higher` })
        }
        return { repo: repo.value, userId, path }
      })

      /**
       * Deploy on push (decisions.md part 17): a push that moved the default branch of a repo with `deployOnPush`, to
       * a commit with `service.json` at its root, uploads that commit's `service.json`, `worker/` and `assets/` as
       * the pusher would, through the same checks and limits. Answers the lines the pusher sees; a refused tree is a
       * line too, never a failed push.
       */
      const deployPush = (grant: TransportGrant, pusher: UserId, changes: ReadonlyArray<RefChange>) =>
        Effect.gen(function* () {
          const branch = grant.repo.defaultBranch
          const moved = changes.find((change) => change.ref === `refs/heads/${branch}` && change.new !== null)
          if (!grant.repo.deployOnPush || moved === undefined) return []
          const commit = moved.new!
          const repoId = grant.repo.id
          const manifest = yield* storage.entry(repoId, commit, ["service.json"])
          if (Option.isNone(manifest) || manifest.value.type !== "blob") return []
          const present: Array<string> = ["service.json"]
          for (const folder of ["worker", "assets"]) {
            const entry = yield* storage.entry(repoId, commit, [folder])
            if (Option.isSome(entry)) present.push(folder)
          }
          const [head] = yield* storage.log(repoId, commit, 1)
          const user = yield* users.findById(pusher)
          const actor: Actor = Option.match(user, {
            onNone: () => ({ userId: pusher, provider: "", subject: "", email: null, name: null }),
            onSome: (found) => ({
              userId: pusher,
              provider: found.provider,
              subject: found.subject,
              email: found.email,
              name: found.name
            })
          })
          const deployment = yield* deployments.upload(
            actor,
            grant.path.orgSlug,
            grant.path.projectName,
            storage.archive(repoId, commit, present),
            {
              commit,
              message: encodeURIComponent(head?.message ?? ""),
              branch: encodeURIComponent(branch),
              dirty: "false"
            }
          )
          const project = yield* projects.findByName(grant.repo.orgId, grant.path.projectName)
          const url = Option.match(project, {
            onNone: () => "",
            onSome: (found) => `, ${settings.siteUrl.split("{host}").join(found.hostname)}`
          })
          return [`deployed version ${deployment.version}${url}`]
        }).pipe(
          Effect.catch((error: unknown) => {
            const code = (error as { constructor?: { code?: unknown } })?.constructor?.code
            const message = (error as { message?: unknown })?.message
            return Effect.succeed([
              `not deployed: ${typeof code === "string" ? code : "deploy_failed"} ${typeof message === "string" ? message : String(error)}`
            ])
          })
        )

      const serve = (grant: TransportGrant, run: GitRun, input: Stream.Stream<Uint8Array, unknown>) => {
        const pusher = grant.userId
        return storage.run(grant.repo.id, grant.repo.defaultBranch, run, input, (changes) =>
          pusher === null || changes.length === 0
            ? Effect.succeed([])
            : Effect.flatMap(nowIso, (at) => store.recordRefUpdates(grant.repo.id, pusher, changes, at)).pipe(
                Effect.andThen(deployPush(grant, pusher, changes))
              )
        )
      }

      return Repos.of({
        list,
        create,
        get,
        update,
        remove,
        refUpdates,
        refs,
        tree,
        blob,
        commits,
        authorizeTransport,
        serve
      })
    })
  )
}
