#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Exit, Layer, Logger, Runtime } from "effect"
import { batchedStdout, formatJsonLine } from "../JsonLines.ts"
import { ServerLive } from "../Server.ts"

/** A stop by SIGINT/SIGTERM that drained cleanly is a normal exit (0), not an error. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

/** One JSON line per log entry (and per request), batched to stdout: `console` costs more per request. */
const jsonLines = Logger.map(formatJsonLine, batchedStdout())

// SIGINT/SIGTERM close the listeners and let requests in flight finish.
Layer.launch(ServerLive.pipe(Layer.provide(Logger.layer([jsonLines])))).pipe(NodeRuntime.runMain({ teardown }))
