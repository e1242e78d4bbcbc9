import { Duration, Effect, Schema } from "effect"
import type { HoldingCounter } from "../orgs/OrgHooks.ts"
import { define, handler, type JobHandler } from "../jobs/Job.ts"
import type { TeardownStep } from "../projects/ProjectHooks.ts"
import { isoToMillis, nowIso } from "../kernel/Time.ts"
import { GitConfig } from "./GitConfig.ts"
import { GitStorage } from "./GitStorage.ts"
import { RepoStore } from "./RepoStore.ts"

/** The retention runner: every 10 minutes, removes from disk the repos soft-deleted longer ago than the retention. */
export const repoPurge = define({
  kind: "repo_purge",
  payload: Schema.Struct({}),
  phases: ["purge"],
  every: Duration.minutes(10),
  singleton: { payload: {} }
})

/** Removes the disk copy, then the record, of every repo deleted before the retention; answers how many went. */
export const purgeExpired: Effect.Effect<number, never, RepoStore | GitStorage | GitConfig> = Effect.gen(function* () {
  const store = yield* RepoStore
  const storage = yield* GitStorage
  const { retention } = yield* GitConfig
  const before = new Date(isoToMillis(yield* nowIso) - Duration.toMillis(retention)).toISOString()
  let purged = 0
  for (;;) {
    const expired = yield* store.listDeletedBefore(before, 100)
    for (const repo of expired) {
      // The record goes only once the disk copy is gone, so a failure is retried at the next round.
      yield* storage.remove(repo.id).pipe(Effect.orDie)
      yield* store.purge(repo.id)
      purged += 1
    }
    if (expired.length < 100) return purged
  }
})

export const repoPurgeHandler: Effect.Effect<JobHandler, never, RepoStore | GitStorage | GitConfig> = Effect.map(
  Effect.context<RepoStore | GitStorage | GitConfig>(),
  (context) => handler(repoPurge, { run: () => Effect.asVoid(Effect.provideContext(purgeExpired, context)) })
)

/** A project delete's `repositories` phase: its repos are soft-deleted, their disk copies go with the retention. */
export const repoTeardown: Effect.Effect<TeardownStep, never, RepoStore> = Effect.map(RepoStore, (store) => ({
  phase: "repositories",
  run: (project) => Effect.asVoid(Effect.flatMap(nowIso, (at) => store.softDeleteProject(project.id, at)))
}))

/** The live repos of an org, for `org_not_empty`. */
export const repoHoldings: Effect.Effect<HoldingCounter, never, RepoStore> = Effect.map(RepoStore, (store) => ({
  kind: "repositories",
  count: (orgId) => store.countInOrg(orgId)
}))
