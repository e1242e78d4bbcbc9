import { Context, type Effect, type Option } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"
import type { Sealed } from "../secrets/Sealer.ts"

/** A granted project's gateway key: its SHA-256 for lookups, the key sealed for the node's `ai` binding. */
export interface AiKeyRow {
  readonly projectId: ProjectId
  readonly keyHash: string
  readonly sealed: Sealed
  readonly createdAt: string
}

/** The AI add-on's grants: one key per granted project; revoking deletes it, so the next grant issues a new key. */
export class AiKeyStore extends Context.Service<
  AiKeyStore,
  {
    readonly find: (projectId: ProjectId) => Effect.Effect<Option.Option<AiKeyRow>>
    readonly insert: (row: AiKeyRow) => Effect.Effect<void>
    /** False when the project held no key. */
    readonly remove: (projectId: ProjectId) => Effect.Effect<boolean>
    /** The project a key (by its hash) belongs to: the gateway's authentication. */
    readonly projectOfKey: (keyHash: string) => Effect.Effect<Option.Option<ProjectId>>
  }
>()("@hostplane/core/ai/AiKeyStore") {}
