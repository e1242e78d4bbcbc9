import { Context, type Effect, type Option } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"
import type { StorageRow, UsageLine } from "./Storage.ts"

/** The storage add-on's rows: one per project that was ever granted, its prefix fixed by the first grant. */
export class StorageStore extends Context.Service<
  StorageStore,
  {
    readonly find: (projectId: ProjectId) => Effect.Effect<Option.Option<StorageRow>>
    /** Creates the row (`usedBytes` 0), or sets `granted` on the existing one; the prefix of a row never changes. */
    readonly setGranted: (projectId: ProjectId, prefix: string, granted: boolean) => Effect.Effect<void>
    /** Sets `usedBytes` of the projects that hold a row; answers the ids it set (others have no row). */
    readonly recordUsage: (lines: ReadonlyArray<UsageLine>) => Effect.Effect<ReadonlyArray<ProjectId>>
  }
>()("@hostplane/core/storage/StorageStore") {}
