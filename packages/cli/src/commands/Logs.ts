import { Effect, Option, Schedule, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { HttpClient, HttpClientRequest } from "effect/http"
import { CliFailure, out } from "../Output.ts"
import { projectSession } from "../Root.ts"

/** One invocation as the API answers it (decisions.md part 13). */
interface LogEvent {
  readonly id: string
  readonly deploymentId: string
  readonly timestamp: string
  readonly outcome: string
  readonly request: { readonly method: string; readonly url: string }
  readonly response: { readonly status: number } | null
  readonly durationMs: number
  readonly logs: ReadonlyArray<{
    readonly level: string
    readonly message: ReadonlyArray<unknown>
    readonly timestamp: string
  }>
  readonly exceptions: ReadonlyArray<{ readonly name: string; readonly message: string; readonly stack: string }>
  readonly truncated: boolean
}

const argument = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value))

/** The human form: the request on one line, then its console lines and exceptions indented beneath. */
export const eventLines = (event: LogEvent): ReadonlyArray<string> => [
  [
    event.timestamp,
    event.request.method,
    event.request.url,
    event.response === null ? "-" : String(event.response.status),
    event.outcome,
    `${event.durationMs}ms`
  ].join("  "),
  ...event.logs.map((line) => `  ${line.level.padEnd(5)} ${line.message.map(argument).join(" ")}`),
  ...event.exceptions.flatMap((exception) => {
    const stack =
      exception.stack.trim() === ""
        ? []
        : exception.stack
            .split("\n")
            .slice(1)
            .map((l) => `    ${l.trim()}`)
    return [`  ${exception.name}: ${exception.message}`, ...stack]
  }),
  ...(event.truncated ? ["  (truncated: lines past 256 per event or 16 KiB per line were dropped)"] : [])
]

const print = (json: boolean, event: LogEvent) =>
  json ? out(JSON.stringify(event)) : Effect.forEach(eventLines(event), out, { discard: true })

/** Server-sent events off a byte stream: each `data:` line's event (the `id:` repeats the event's own id). */
const sseEvents = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>): Stream.Stream<LogEvent, E, R> =>
  bytes.pipe(
    Stream.decodeText,
    Stream.splitLines,
    Stream.filter((line) => line.startsWith("data: ")),
    Stream.map((line) => JSON.parse(line.slice(6)) as LogEvent)
  )

const outcomes = ["ok", "exception", "timeout", "canceled"] as const

export const logs = Command.make(
  "logs",
  {
    follow: Flag.Boolean("follow").pipe(
      Flag.withAlias("f"),
      Flag.withDescription("Keep printing new invocations as they happen (reconnects where it left off)"),
      Flag.withDefault(false)
    ),
    outcome: Flag.Literals("outcome", outcomes).pipe(
      Flag.withDescription("Only invocations that ended so: ok, exception, timeout, canceled"),
      Flag.optional
    ),
    deployment: Flag.String("deployment").pipe(
      Flag.withDescription("Only this deployment's invocations"),
      Flag.optional
    ),
    limit: Flag.Int("limit").pipe(
      Flag.withDescription("How many recent invocations first (1..200)"),
      Flag.withDefault(50)
    )
  },
  Effect.fn("logs")(function* ({ follow, outcome, deployment, limit }) {
    const { flags, api, params, url, token } = yield* projectSession
    const filters = {
      ...(Option.isSome(outcome) ? { outcome: outcome.value } : {}),
      ...(Option.isSome(deployment) ? { deployment: deployment.value } : {})
    }
    const page = yield* api.logs.list({ params, query: { limit, ...filters } as never })
    if (!follow) {
      // Oldest first, as a terminal reads a log; --json prints the page as the API answers it.
      if (flags.json) return yield* out(JSON.stringify(page, null, 2))
      return yield* Effect.forEach([...page.items].reverse(), (event) => print(false, event as LogEvent), {
        discard: true
      })
    }
    for (const event of [...page.items].reverse()) yield* print(flags.json, event as LogEvent)
    // The stream resumes after the newest event printed, so nothing is printed twice or lost across a reconnect.
    let last: string | undefined = (page.items[0] as LogEvent | undefined)?.id
    const client = yield* HttpClient.HttpClient
    const streamUrl = new URL(
      `${url}/v1/orgs/${encodeURIComponent(params.orgSlug)}/projects/${encodeURIComponent(params.projectName)}/logs/stream`
    )
    for (const [key, value] of Object.entries(filters)) streamUrl.searchParams.set(key, value)
    const connect = Effect.gen(function* () {
      const request = HttpClientRequest.get(streamUrl).pipe(
        HttpClientRequest.bearerToken(token),
        HttpClientRequest.setHeaders({
          accept: "text/event-stream",
          ...(last === undefined ? {} : { "last-event-id": last })
        })
      )
      const response = yield* client.execute(request)
      if (response.status !== 200) {
        const body = (yield* Effect.orElseSucceed(response.json, () => ({}))) as { code?: string; message?: string }
        return yield* new CliFailure({
          code: body.code ?? `http_${response.status}`,
          message: body.message ?? `the log stream answered ${response.status}`
        })
      }
      yield* Stream.runForEach(sseEvents(response.stream), (event) =>
        Effect.andThen(
          print(flags.json, event),
          Effect.sync(() => (last = event.id))
        )
      )
    }).pipe(Effect.scoped)
    // A dropped connection (a server restart, a proxy's idle timeout) is resumed; a refusal (401, 403, 404) is not.
    yield* connect.pipe(
      Effect.retry({
        while: (error) => !(error instanceof CliFailure),
        schedule: Schedule.spaced("1 second")
      }),
      Effect.repeat(Schedule.spaced("1 second"))
    )
  })
).pipe(
  Command.withDescription(
    "Print the project's runtime logs: one line per invocation of its worker, its console lines and exceptions beneath"
  )
)
