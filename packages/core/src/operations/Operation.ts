import { Context, Effect, Option, Schema } from "effect"

export const TerminalCode = Schema.Literals(["done", "aborted", "failed"])
export type TerminalCode = typeof TerminalCode.Type

/** A long-running job as clients see it (decisions.md part 4). */
export const Operation = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  projectId: Schema.String,
  phase: Schema.String,
  terminalCode: Schema.NullOr(TerminalCode),
  createdAt: Schema.String,
  updatedAt: Schema.String
})
export type Operation = typeof Operation.Type

export const OperationStarted = Schema.Struct({ operationId: Schema.String })

/** The stored operation: claimed by one runner at a time, resumed after a crash. */
export interface OperationRow extends Operation {
  readonly orgId: string
  readonly attempts: number
  readonly nextRunAt: string
  readonly lastError: string | null
}

export const toOperation = (row: OperationRow): Operation => ({
  id: row.id,
  kind: row.kind,
  projectId: row.projectId,
  phase: row.phase,
  terminalCode: row.terminalCode,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt
})

/** Durable operations. A row is worked on only by the runner that claimed it, until its lease runs out. */
export class OperationStore extends Context.Service<
  OperationStore,
  {
    readonly insert: (row: OperationRow) => Effect.Effect<void>
    readonly get: (opId: string) => Effect.Effect<Option.Option<OperationRow>>
    /** The unfinished operation of `kind` on the project, if any. */
    readonly findRunning: (projectId: string, kind: string) => Effect.Effect<Option.Option<OperationRow>>
    /** Claims unfinished rows due at `now` (PostgreSQL: `FOR UPDATE SKIP LOCKED`), leasing them until `leaseUntil`. */
    readonly claim: (now: string, leaseUntil: string, limit: number) => Effect.Effect<ReadonlyArray<OperationRow>>
    /** Records the next phase; the row stays leased to its runner. */
    readonly advance: (opId: string, phase: string, at: string) => Effect.Effect<void>
    readonly finish: (opId: string, code: TerminalCode, at: string) => Effect.Effect<void>
    /** Gives the row back for a later attempt. */
    readonly retryLater: (opId: string, error: string, nextRunAt: string, at: string) => Effect.Effect<void>
  }
>()("@hostplane/core/operations/OperationStore") {}
