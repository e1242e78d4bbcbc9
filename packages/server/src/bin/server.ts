#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Logger, Runtime } from "effect"
import { batchedStdout, formatJsonLine } from "../JsonLines.ts"
import { ListenError } from "../Listeners.ts"
import { ServerLive } from "../Server.ts"
import { telemetryLayer } from "../Telemetry.ts"

/** A stop by SIGINT/SIGTERM that drained cleanly is a normal exit (0), not an error. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

/** One JSON line per log entry (and per request), batched to stdout: `console` costs more per request. */
const jsonLines = Logger.layer([Logger.map(formatJsonLine, batchedStdout())])

/** A start that fails says why in the same JSON log, naming the setting to change when a listener cannot bind. */
const reportFailure = (cause: Cause.Cause<unknown>) => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.void
  const error = Cause.findErrorOption(cause)
  if (error._tag === "Some" && error.value instanceof ListenError) {
    const { listener, address, setting, code } = error.value
    return Effect.logError(error.value.message).pipe(Effect.annotateLogs({ listener, address, setting, code }))
  }
  return Effect.logError("hostplane stopped on an error", cause)
}

// SIGINT/SIGTERM close the listeners and let requests in flight finish.
// OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set; built inside the JSON logger so its logger joins that one.
Layer.launch(ServerLive.pipe(Layer.provide(telemetryLayer), Layer.provide(jsonLines))).pipe(
  Effect.tapCause(reportFailure),
  Effect.provide(jsonLines),
  NodeRuntime.runMain({ teardown, disableErrorReporting: true })
)
