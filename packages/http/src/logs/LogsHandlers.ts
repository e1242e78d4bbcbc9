import { Kernel, Logs } from "@hostplane/core"
import { Effect, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { LogsApi } from "@hostplane/api/logs/LogsApi"

const api = areaApi(LogsApi)

const actor = Effect.service(Kernel.CurrentActor)

/** One server-sent event: the id a reconnect names in `Last-Event-ID`, the event as one line of JSON. */
const frame = (event: Logs.LogEvent): string => `id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`

export const LogsHandlers = HttpApiBuilder.group(
  api,
  "logs",
  Effect.fn(function* (handlers) {
    const logs = yield* Logs.RuntimeLogs
    const { heartbeat } = yield* Logs.LogsConfig
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.flatMap(actor, (a) => logs.list(a, params.orgSlug, params.projectName, query))
      )
      .handle("stream", ({ params, query, headers }) =>
        Effect.flatMap(actor, (a) =>
          logs.follow(a, params.orgSlug, params.projectName, { ...query, lastEventId: headers["last-event-id"] })
        ).pipe(
          Effect.map((events) =>
            HttpServerResponse.stream(
              // The first comment makes the headers go out at once; later ones keep idle connections open.
              Stream.merge(
                Stream.map(events, frame),
                Stream.map(Stream.tick(heartbeat), () => ": keep-alive\n\n")
              ).pipe(Stream.encodeText),
              {
                contentType: "text/event-stream; charset=utf-8",
                headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
              }
            )
          )
        )
      )
  })
)
