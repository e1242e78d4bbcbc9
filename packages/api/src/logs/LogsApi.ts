import { withRules } from "../auth/Rules.ts"
import { logsRules } from "@hostplane/core/logs/LogsRules"
import { Errors, Kernel, Logs } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

const describe = (description: string) => OpenApi.annotations({ description })

const logsPath = "/orgs/:orgSlug/projects/:projectName/logs" as const

const filters = {
  deployment: Schema.optionalKey(Schema.String.annotate({ description: "Only this deployment's events (`dep_...`)." })),
  outcome: Schema.optionalKey(
    Schema.String.annotate({ description: "Only events of this outcome: `ok`, `exception`, `timeout`, `canceled`." })
  )
}

/** decisions.md parts 6 and 13: a node on another machine reports its invocations, authorized by `SERVICE_NODE_TOKEN`. */
export class NodeLogsApi extends HttpApiGroup.make("nodeLogs")
  .add(
    HttpApiEndpoint.post("report", "/node/logs", {
      headers: {
        authorization: Schema.optionalKey(Schema.String.annotate({ description: "`Bearer <SERVICE_NODE_TOKEN>`." }))
      },
      payload: Logs.LogReport,
      success: Logs.LogReportAccepted.pipe(HttpApiSchema.status(202)),
      error: apiErrors(Errors.BadRequest, Errors.Unauthorized, Errors.PayloadTooLarge, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Report worker invocations")
      .annotateMerge(
        describe(
          [
            "Node token as for the node state (unset: 501 `node_api_off`; wrong or missing: 401). Body",
            "`{ events: [LogEventInput] }`, 1 to 100 events, at most 1 MiB (413): per invocation its `projectId`,",
            "`deploymentId`, `timestamp` (RFC 3339 or epoch milliseconds), `outcome`, `request`, `response`,",
            "`durationMs`, `logs` and `exceptions` as a workerd tail event gives them. The server assigns ids and",
            "applies the limits of the list (256 lines of 16 KiB, `truncated`); events of projects that no longer",
            "exist are dropped. Answers 202 `{ accepted }`."
          ].join(" ")
        )
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Node log report", description: "decisions.md parts 6 and 13." })) {}

/** decisions.md part 13: the runtime logs of a project's worker, one event per invocation. */
export class LogsApi extends withRules(
  HttpApiGroup.make("logs")
    .add(
      HttpApiEndpoint.get("list", logsPath, {
        params: ProjectRef,
        query: { ...Kernel.PageQuery, ...filters },
        success: Logs.LogEventPage,
        error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "List runtime log events")
        .annotateMerge(
          describe(
            [
              "One event per invocation of the project's worker, newest first by `timestamp` (the",
              "invocation's start). `limit` 1..200 (default 50); `cursor` is the previous page's `nextCursor` (null on the",
              "last page; anything else is 400); `deployment` and `outcome` filter (an outcome other than `ok`,",
              "`exception`, `timeout`, `canceled` is 400). `message` of a log line is the `console` call's arguments as",
              "JSON values. At most 256 lines of 16 KiB per event; `truncated` is true when more was dropped. Events are",
              "kept 24 hours or the project's last 10,000, whichever is fewer (`SERVICE_WORKER_LOG_RETENTION`), and go",
              "with their project."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("stream", `${logsPath}/stream`, {
        params: ProjectRef,
        query: filters,
        headers: {
          "last-event-id": Schema.optionalKey(
            Schema.String.annotate({ description: "The `id` of the last event received: the stream resumes after it." })
          )
        },
        success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })).annotate({
          description: "Server-sent events: `id: <event id>` and `data: <LogEvent JSON>` per event."
        }),
        error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Forbidden)
      })
        .annotate(OpenApi.Summary, "Follow runtime log events")
        .annotateMerge(
          describe(
            [
              "With the bearer token as on every route (a browser reads it with `fetch`, not",
              "`EventSource`). `text/event-stream`: each event recorded from now on, on any server, as `id: <event id>`",
              "and `data: <LogEvent JSON>` within a second of its invocation's end, in recording order; a comment line",
              "every 15 seconds keeps the connection open. A reconnect with `Last-Event-ID` first sends the events",
              "recorded after that one (an id no longer kept resumes with new events only; one that is no event id at",
              "all is 400). `deployment` and `outcome` filter as for the list."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({
        title: "Runtime logs",
        description: "A project's worker invocations (decisions.md part 13)."
      })
    ),
  logsRules
) {}
