import { Context, type Effect, type Option } from "effect"
import type { RepoExists } from "../errors/Errors.ts"
import type { OrgId, ProjectId, RepoId, UserId } from "../kernel/Ids.ts"
import type { RefChange, RefUpdate, RepoRow, Visibility } from "./Repo.ts"

/** Repositories, unique by name per project ignoring case among the live ones, and their ref update history. */
export class RepoStore extends Context.Service<
  RepoStore,
  {
    /** The project's live repos by name. */
    readonly list: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<RepoRow>>
    /** The live repo of that name (ignoring case). */
    readonly findByName: (projectId: ProjectId, name: string) => Effect.Effect<Option.Option<RepoRow>>
    readonly insert: (row: RepoRow) => Effect.Effect<void, RepoExists>
    readonly update: (
      id: RepoId,
      change: {
        readonly name: string
        readonly visibility: Visibility
        readonly defaultBranch: string
        readonly deployOnPush: boolean
      }
    ) => Effect.Effect<void, RepoExists>
    /** Soft delete: the repo leaves every lookup at once; its name is free again. */
    readonly softDelete: (id: RepoId, at: string) => Effect.Effect<void>
    /** Soft-deletes every live repo of the project (its delete's `repositories` phase); answers their ids. */
    readonly softDeleteProject: (projectId: ProjectId, at: string) => Effect.Effect<ReadonlyArray<RepoId>>
    /** Live repos of an org, for `org_not_empty`. */
    readonly countInOrg: (
      orgId: OrgId
    ) => Effect.Effect<{ readonly count: number; readonly names: ReadonlyArray<string> }>
    /** Soft-deleted repos deleted at or before `before`, oldest first, at most `limit`. */
    readonly listDeletedBefore: (before: string, limit: number) => Effect.Effect<ReadonlyArray<RepoRow>>
    /** Forgets a soft-deleted repo once its disk copy is gone (its ref history with it). */
    readonly purge: (id: RepoId) => Effect.Effect<void>
    readonly recordRefUpdates: (
      id: RepoId,
      userId: UserId,
      changes: ReadonlyArray<RefChange>,
      at: string
    ) => Effect.Effect<void>
    /** The latest `limit` ref updates, newest first. */
    readonly listRefUpdates: (id: RepoId, limit: number) => Effect.Effect<ReadonlyArray<RefUpdate>>
  }
>()("@hostplane/core/git/RepoStore") {}
