import { Duration, type Effect, Schema } from "effect"

export const TerminalCode = Schema.Literals(["done", "aborted", "failed"])
export type TerminalCode = typeof TerminalCode.Type

/** A stored job: its kind's payload (as JSON), the phase it is at, and who holds it until when. */
export interface JobRow {
  readonly id: string
  readonly kind: string
  /** At most one unfinished job of a kind has a given key (one delete per project). */
  readonly key: string | null
  readonly payload: unknown
  readonly phase: string
  readonly terminalCode: TerminalCode | null
  /** Claims so far (each claim counts one); the backoff and `maxAttempts` read it. */
  readonly attempts: number
  /** When the job is next due. */
  readonly runAt: string
  /** The runner holding the job, until `leaseUntil` or until that runner is gone. */
  readonly leaseOwner: string | null
  readonly leaseUntil: string | null
  readonly abortRequested: boolean
  readonly lastError: string | null
  readonly createdAt: string
  readonly updatedAt: string
}

/** A claimed job as its kind sees it: the decoded payload and the phase to run. */
export interface Job<P> {
  readonly id: string
  readonly kind: string
  readonly key: string | null
  readonly payload: P
  readonly phase: string
  readonly attempts: number
  readonly createdAt: string
}

/**
 * What a kind of job is, independent of the services that run it: enqueuers need only this. Phases run in order;
 * every phase must be idempotent, since a crash or a lost lease repeats the phase that was running.
 */
export interface JobDefinition<P> {
  readonly kind: string
  readonly payload: Schema.Codec<P, unknown>
  readonly phases: readonly [string, ...Array<string>]
  /** Abort is accepted while the job is at a phase before this one (`committing`); without it, never. */
  readonly abortableBefore?: string
  /** After its last phase the job starts again at its first phase this long after its claim (until a phase stops it). */
  readonly every?: Duration.Duration
  /** A periodic kind: one job of it always exists, created by the runner with this payload. Needs `every`. */
  readonly singleton?: { readonly payload: P }
  /** Claims before a failing job ends `failed` (default 20). */
  readonly maxAttempts?: number
  /** Delay before the next attempt after `attempts` claims (default 1 s doubling, at most 5 minutes). */
  readonly backoff?: (attempts: number) => Duration.Duration
}

export const define = <P>(definition: JobDefinition<P>): JobDefinition<P> => definition

/**
 * `definition` pinned to one place, as the kind `<kind>@<place>`: a runner claims only the kinds it has handlers for,
 * so a job of this kind runs only where a handler for that place is registered (the replica holding a project's
 * embedded database cluster). Clients see `baseKind`.
 */
export const pinned = <P>(definition: JobDefinition<P>, place: string): JobDefinition<P> => ({
  ...definition,
  kind: `${definition.kind}@${place}`
})

/** The kind without the place it is pinned to (`restore_generation@node_1` is `restore_generation`). */
export const baseKind = (kind: string): string => {
  const at = kind.indexOf("@")
  return at < 0 ? kind : kind.slice(0, at)
}

/** A phase may end its job early, as done: a hostname check stops once the name is verified or gone. */
export const stop = "stop" as const
export type Stop = typeof stop

/** A phase that cannot succeed; `retryable: false` ends the job `failed` at once. */
export class JobFailure extends Schema.TaggedError<JobFailure>()("JobFailure", {
  message: Schema.String,
  retryable: Schema.Boolean
}) {}

/** How a kind is carried out, with its services already resolved. */
export interface JobHandler<P = any> {
  readonly definition: JobDefinition<P>
  readonly run: (phase: string, job: Job<P>) => Effect.Effect<void | Stop, JobFailure>
  /** Undoes what the phases before the abort did (an aborted database operation takes connections again). */
  readonly onAbort?: (job: Job<P>) => Effect.Effect<void>
  /** Records the final failure in the area's own rows (a mail row becomes `failed`). */
  readonly onFailed?: (job: Job<P>, error: string) => Effect.Effect<void>
}

export const handler = <P>(
  definition: JobDefinition<P>,
  implementation: Omit<JobHandler<P>, "definition">
): JobHandler<P> => ({ definition, ...implementation })

export const defaultMaxAttempts = 20

/** 1 s doubling per attempt, at most 5 minutes. */
export const defaultBackoff = (attempts: number): Duration.Duration =>
  Duration.millis(Math.min(1_000 * 2 ** Math.max(attempts, 0), 300_000))

/** The phases at which `definition` still accepts an abort. */
export const abortablePhases = (definition: JobDefinition<unknown>): ReadonlyArray<string> => {
  const before = definition.abortableBefore
  if (before === undefined) return []
  const index = definition.phases.indexOf(before)
  return index < 0 ? [] : definition.phases.slice(0, index)
}
