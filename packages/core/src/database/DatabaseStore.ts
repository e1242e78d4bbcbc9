import { Context, type Effect, type Option } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"
import type { Sealed } from "../secrets/Sealer.ts"
import type { DatabaseRow, GenerationRow, TokenRow } from "./Database.ts"

/**
 * The control rows of the database add-on: one configuration record per project database, its tokens (verifiers
 * only), and its generations, which outlive the record so the final safety generation stays listed.
 */
export class DatabaseStore extends Context.Service<
  DatabaseStore,
  {
    readonly find: (projectId: ProjectId) => Effect.Effect<Option.Option<DatabaseRow>>
    /**
     * Inserts the record, homed at `home`, unless one exists (a concurrent create keeps the first password and home)
     * and answers the stored one.
     */
    readonly create: (
      projectId: ProjectId,
      sealedPassword: Sealed,
      at: string,
      home: string | null
    ) => Effect.Effect<DatabaseRow>
    /**
     * Records the database's home and where its cluster listens, unless another home holds it; false then. A record
     * without a home is taken by the first replica that finds its cluster (a database made before homes existed).
     */
    readonly place: (projectId: ProjectId, home: string, endpoint: DatabaseRow["endpoint"]) => Effect.Effect<boolean>
    /**
     * Moves the database from the home `from` to `to`, held by `operationId` (its rebuild there), with no endpoint
     * until the rebuild records one; false when it is no longer homed at `from` or another operation holds it.
     */
    readonly move: (projectId: ProjectId, from: string, to: string, operationId: string) => Effect.Effect<boolean>
    /** Removes the record and its tokens; generations stay. */
    readonly remove: (projectId: ProjectId) => Effect.Effect<void>
    readonly setEpoch: (projectId: ProjectId, epoch: number) => Effect.Effect<void>
    /** Marks the operation holding the database (null to release); false when another one holds it. */
    readonly holdFor: (projectId: ProjectId, operationId: string | null) => Effect.Effect<boolean>
    /** Every project that has a database record. */
    readonly projects: Effect.Effect<ReadonlyArray<ProjectId>>
    readonly tokens: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<TokenRow>>
    readonly addToken: (token: TokenRow) => Effect.Effect<void>
    /** False when the project holds no such token. */
    readonly removeToken: (projectId: ProjectId, user: string) => Effect.Effect<boolean>
    /** Newest first: by epoch, then seq, both descending. */
    readonly generations: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<GenerationRow>>
    readonly addGeneration: (generation: GenerationRow) => Effect.Effect<void>
    /** Records a re-hash: `ok` sets `lastCheckedAt`, a mismatch sets `checkFailedAt`. */
    readonly checked: (projectId: ProjectId, epoch: number, seq: number, at: string, ok: boolean) => Effect.Effect<void>
    /** Forgets every generation of the project (project teardown, after their images are removed). */
    readonly removeGenerations: (projectId: ProjectId) => Effect.Effect<void>
    /**
     * Runs `effect` while no other holder runs one for the same project, in this process or in any other on the same
     * store (replicas): generations are numbered from the ones before, and a restore's sealing generation must wait for
     * a scheduled one still streaming. A holder that dies gives the project back.
     */
    readonly exclusive: <A, E, R>(projectId: ProjectId, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  }
>()("@hostplane/core/database/DatabaseStore") {}
