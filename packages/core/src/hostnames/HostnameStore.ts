import { Context, Effect, Option } from "effect"
import type { HostnameTaken } from "../errors/Errors.ts"
import type { HostnameRow } from "./Hostname.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/**
 * Hostname rows (spec 4.4). A name is unique across all orgs, default and custom alike. The background checks of
 * pending rows are `hostname_check` jobs.
 */
export class HostnameStore extends Context.Service<
  HostnameStore,
  {
    readonly find: (name: string) => Effect.Effect<Option.Option<HostnameRow>>
    /** The project's hostnames: the default one first, then custom ones by creation time and name. */
    readonly listByProject: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<HostnameRow>>
    /** Inserts a row; a taken name fails with `HostnameTaken`. */
    readonly insert: (row: HostnameRow) => Effect.Effect<void, HostnameTaken>
    readonly remove: (name: string) => Effect.Effect<void>
    /**
     * Makes the row `active` with `lastError` cleared; `verifiedAt` keeps an earlier value. Only the row with this
     * `verifyToken` changes, so a check never verifies a name removed and added again meanwhile. Answers the row as it
     * now stands, none when it is gone or replaced.
     */
    readonly markActive: (name: string, verifyToken: string, at: string) => Effect.Effect<Option.Option<HostnameRow>>
    /** Records what a failed check observed on the pending row with this token; an active row is left alone. */
    readonly recordFailure: (
      name: string,
      verifyToken: string,
      error: string
    ) => Effect.Effect<Option.Option<HostnameRow>>
  }
>()("@hostplane/core/hostnames/HostnameStore") {}
