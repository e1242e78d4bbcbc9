import { Context, type Effect, type Option, type Scope } from "effect"
import type { LogEventId, ProjectId } from "../kernel/Ids.ts"
import type { PagePosition } from "../kernel/PageCursor.ts"
import type { LogEvent, LogEventRow, LogOutcome } from "./LogEvent.ts"

/** An event recorded (committed) somewhere: what a live feed announces. */
export interface LogNote {
  readonly projectId: ProjectId
  readonly id: LogEventId
}

/** A subscription to recorded events; `next` waits for at least one and answers every note since the last call. */
export interface LogFeed {
  readonly next: Effect.Effect<ReadonlyArray<LogNote>>
}

export interface LogListQuery {
  readonly limit: number
  /** The last row of the previous page: rows strictly older in (timestamp, id) order. */
  readonly before?: PagePosition | undefined
  /** Only events at or after this instant (the retention window). */
  readonly since: string
  readonly deploymentId?: string | undefined
  readonly outcome?: LogOutcome | undefined
}

/** What the retention keeps (decisions.md part 13): events since `since`, and a project's newest `keep`. */
export interface LogRetention {
  readonly since: string
  readonly keep: number
}

/**
 * Runtime log events (decisions.md part 13), each with its project; they go with their project. Events have a
 * recording order (the order `insert` committed them), which the feed and `after` follow; pages follow the events'
 * own times. Every insert is announced to the subscribers of `watch` on every server once it commits.
 */
export class LogStore extends Context.Service<
  LogStore,
  {
    /**
     * Records events; one whose project does not exist is dropped. Answers how many were recorded: a count, not the
     * rows, because a busy node records hundreds of events a second and nothing reads them back from the insert.
     */
    readonly insert: (rows: ReadonlyArray<LogEventRow>) => Effect.Effect<number>
    /** Newest first by (timestamp, id). */
    readonly list: (projectId: ProjectId, query: LogListQuery) => Effect.Effect<ReadonlyArray<LogEvent>>
    /**
     * The project's events recorded after the event `id`, in recording order, at most `limit`; none when `id` names
     * no event of the project (gone, or another project's).
     */
    readonly after: (
      projectId: ProjectId,
      id: LogEventId,
      limit: number
    ) => Effect.Effect<Option.Option<ReadonlyArray<LogEvent>>>
    /** The project's events among `ids`, in recording order (others' and gone ones left out). */
    readonly byIds: (projectId: ProjectId, ids: ReadonlyArray<LogEventId>) => Effect.Effect<ReadonlyArray<LogEvent>>
    /**
     * Deletes events older than `retention.since`, and of each project every event but its newest `retention.keep`
     * (in recording order); answers how many went. It may look only at projects that recorded since its last run.
     */
    readonly purge: (retention: LogRetention) => Effect.Effect<number>
    /** Deletes every event of a project (its delete). */
    readonly removeProject: (projectId: ProjectId) => Effect.Effect<void>
    /**
     * A feed of the events recorded (committed) from the moment it opens: never one recorded before, even when that
     * one's announcement reaches this process after the feed opened, so a stream opened without `Last-Event-ID`
     * starts strictly after the newest event of that moment.
     */
    readonly watch: Effect.Effect<LogFeed, never, Scope.Scope>
  }
>()("@hostplane/core/logs/LogStore") {}
