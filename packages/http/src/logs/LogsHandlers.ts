import { Kernel, Logs, Node } from "@hostplane/core"
import { Effect, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { LogsApi, NodeLogsApi } from "@hostplane/api/logs/LogsApi"
import { bearer } from "../node/NodeHandlers.ts"
import { Draining } from "../server/Draining.ts"

const api = areaApi(LogsApi, NodeLogsApi)

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
          Effect.zip(Draining),
          Effect.map(([batches, draining]) => {
            // The first comment goes out once the stream is live, so a client that has read it misses nothing
            // recorded after; later ones keep an idle connection open.
            let live = false
            const text = Stream.map(batches, (events) => {
              const head = live ? "" : ": live\n\n"
              live = true
              return head + events.map(frame).join("")
            })
            return HttpServerResponse.stream(
              Stream.merge(
                text,
                Stream.map(Stream.drop(Stream.tick(heartbeat), 1), () => ": keep-alive\n\n")
              ).pipe(
                // A stop ends the stream: the client reconnects elsewhere with Last-Event-ID and misses nothing.
                Stream.interruptWhen(draining.started),
                Stream.encodeText
              ),
              {
                contentType: "text/event-stream; charset=utf-8",
                headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
              }
            )
          })
        )
      )
  })
)

export const NodeLogsHandlers = HttpApiBuilder.group(
  api,
  "nodeLogs",
  Effect.fn(function* (handlers) {
    const nodes = yield* Node.Nodes
    const logs = yield* Logs.RuntimeLogs
    return handlers.handle("report", ({ headers, payload }) =>
      Effect.andThen(
        nodes.authorize(bearer(headers.authorization)),
        Effect.map(logs.recordAll(payload.events), (accepted) => ({ accepted }))
      )
    )
  })
)
