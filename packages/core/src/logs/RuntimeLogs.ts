import { Cause, Clock, Context, Duration, Effect, Layer, Option, Stream } from "effect"
import { logsRules } from "./LogsRules.ts"
import { BadRequest, type Forbidden, type NotFound } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { type LogEventId, makeId, type ProjectId } from "../kernel/Ids.ts"
import { decodePageCursor, encodePageCursor, pageSize } from "../kernel/PageCursor.ts"
import { Policy } from "../kernel/Policy.ts"
import { Tokens } from "../kernel/Tokens.ts"
import {
  boundEvent,
  type LogEvent,
  type LogEventInput,
  type LogEventPage,
  type LogEventRow,
  LogOutcome
} from "./LogEvent.ts"
import { LogsConfig } from "./LogsConfig.ts"
import { LogStore } from "./LogStore.ts"

/** The filters of a list or a stream, as the query gives them (`deployment`, `outcome`). */
export interface LogFilter {
  readonly deployment?: string | undefined
  readonly outcome?: string | undefined
}

export interface LogListRequest extends LogFilter {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

export interface LogFollowRequest extends LogFilter {
  /** The stream's `Last-Event-ID`: resume after that event. */
  readonly lastEventId?: string | undefined
}

/** A backlog resumed with `Last-Event-ID` is read this many events at a time. */
const backlogPage = 500

const eventIdPattern = /^log_[A-Za-z0-9_]{1,100}$/u

const outcomeOf = (outcome: string | undefined): Effect.Effect<LogOutcome | undefined, BadRequest> => {
  if (outcome === undefined || outcome === "") return Effect.succeed(undefined)
  return (LogOutcome.literals as ReadonlyArray<string>).includes(outcome)
    ? Effect.succeed(outcome as LogOutcome)
    : Effect.fail(
        new BadRequest({
          message: "outcome is one of ok, exception, timeout, canceled",
          details: { field: "outcome" }
        })
      )
}

const matches =
  (deployment: string | undefined, outcome: LogOutcome | undefined) =>
  (event: LogEvent): boolean =>
    (deployment === undefined || event.deploymentId === deployment) &&
    (outcome === undefined || event.outcome === outcome)

/**
 * The runtime logs of decisions.md part 13: one event per invocation, recorded by the node's collector within the
 * part's limits, read by members as newest-first pages and followed live. A recorded event reaches every follower
 * on every server through the store's feed; retention is the purge job's, so recording stays one insert.
 */
export class RuntimeLogs extends Context.Service<
  RuntimeLogs,
  {
    /** Records one invocation; never fails (a storage fault is logged and the event lost, never the request). */
    readonly record: (input: LogEventInput) => Effect.Effect<void>
    /** Records several invocations at once; answers how many were kept (events of unknown projects are dropped). */
    readonly recordAll: (inputs: ReadonlyArray<LogEventInput>) => Effect.Effect<number>
    readonly list: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      request: LogListRequest
    ) => Effect.Effect<LogEventPage, NotFound | Forbidden | BadRequest>
    /**
     * The project's events in batches as they are recorded. The first batch comes once the stream is live (no event
     * recorded from then on can be missed): the events recorded after `lastEventId` when it names one still kept, else
     * empty (an id no longer kept resumes with new events only); every later batch holds at least one new event.
     * Authorization and input are checked at once.
     */
    readonly follow: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      request: LogFollowRequest
    ) => Effect.Effect<Stream.Stream<ReadonlyArray<LogEvent>>, NotFound | Forbidden | BadRequest>
    /** A project delete: its events go with it. */
    readonly teardown: (projectId: ProjectId) => Effect.Effect<void>
  }
>()("@hostplane/core/logs/RuntimeLogs") {
  static readonly layer = Layer.effect(
    RuntimeLogs,
    Effect.gen(function* () {
      const store = yield* LogStore
      const policy = yield* Policy
      const tokens = yield* Tokens
      const { retention } = yield* LogsConfig

      const recordAll = Effect.fn("RuntimeLogs.recordAll")(function* (inputs: ReadonlyArray<LogEventInput>) {
        if (inputs.length === 0) return 0
        const receivedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
        // One random id per batch, each event's its place in it, in four base-36 digits (a batch is far below 36^4):
        // unique as the batch's id is, with no random draw per event (a busy node records hundreds a second).
        const batch = yield* tokens.id("log")
        const rows: Array<LogEventRow> = []
        for (let index = 0; index < inputs.length; index++) {
          const input = inputs[index]!
          const id = makeId("log", `${batch}${index.toString(36).padStart(4, "0")}`)
          rows.push({ projectId: makeId("prj", input.projectId), event: boundEvent(input, id, receivedAt) })
        }
        return yield* store.insert(rows)
      })

      const record = (input: LogEventInput) =>
        recordAll([input]).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("runtime log event lost", { projectId: input.projectId, cause: Cause.pretty(cause) })
          ),
          Effect.asVoid
        )

      const since = Effect.map(Clock.currentTimeMillis, (now) =>
        new Date(now - Duration.toMillis(retention.maxAge)).toISOString()
      )

      const list = Effect.fn("RuntimeLogs.list")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        request: LogListRequest
      ) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, logsRules.list)
        const outcome = yield* outcomeOf(request.outcome)
        const cursor = request.cursor ?? ""
        const before = cursor === "" ? Option.none() : decodePageCursor(cursor, "log")
        if (cursor !== "" && Option.isNone(before)) {
          return yield* new BadRequest({ message: "cursor is not one this API returned", details: { field: "cursor" } })
        }
        const size = pageSize(request.limit)
        const rows = yield* store.list(project.id, {
          limit: size + 1,
          before: Option.getOrUndefined(before),
          since: yield* since,
          deploymentId: request.deployment === "" ? undefined : request.deployment,
          outcome
        })
        const items = rows.slice(0, size)
        const last = items.at(-1)
        return {
          items,
          nextCursor:
            rows.length > size && last !== undefined
              ? encodePageCursor({ createdAt: last.timestamp, id: last.id })
              : null
        } satisfies LogEventPage
      })

      const backlog = Effect.fnUntraced(function* (projectId: ProjectId, lastEventId: LogEventId) {
        const events: Array<LogEvent> = []
        let after = lastEventId
        while (events.length < retention.maxEvents) {
          const page = yield* store.after(projectId, after, backlogPage)
          if (Option.isNone(page)) break
          events.push(...page.value)
          const last = page.value.at(-1)
          if (page.value.length < backlogPage || last === undefined) break
          after = makeId("log", last.id)
        }
        return events
      })

      const follow = Effect.fn("RuntimeLogs.follow")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        request: LogFollowRequest
      ) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, logsRules.stream)
        const outcome = yield* outcomeOf(request.outcome)
        const lastEventId = request.lastEventId?.trim() ?? ""
        if (lastEventId !== "" && !eventIdPattern.test(lastEventId)) {
          return yield* new BadRequest({
            message: "Last-Event-ID is not an event id this stream sent",
            details: { field: "Last-Event-ID" }
          })
        }
        const deployment = request.deployment === "" ? undefined : request.deployment
        const projectId = project.id
        return Stream.unwrap(
          Effect.gen(function* () {
            // Subscribed before the backlog is read, so an event recorded meanwhile is in one or the other.
            const feed = yield* store.watch
            const earlier = lastEventId === "" ? [] : yield* backlog(projectId, makeId("log", lastEventId))
            const sent = new Set<string>(earlier.map((event) => event.id))
            const wanted = matches(deployment, outcome)
            const live = Stream.fromEffectRepeat(feed.next).pipe(
              Stream.mapEffect((notes) => {
                const ids = notes
                  .filter((note) => note.projectId === projectId && !sent.delete(note.id))
                  .map((note) => note.id)
                return ids.length === 0 ? Effect.succeed([]) : store.byIds(projectId, ids)
              }),
              Stream.map((events) => events.filter(wanted)),
              Stream.filter((events) => events.length > 0)
            )
            return Stream.concat(Stream.succeed(earlier.filter(wanted)), live)
          })
        )
      })

      const teardown = (projectId: ProjectId) => store.removeProject(projectId)

      return RuntimeLogs.of({ record, recordAll, list, follow, teardown })
    })
  )
}
