#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Exit, Layer, Logger, Runtime } from "effect"
import { ServerLive } from "../server/Server.ts"

/** A stop by SIGINT/SIGTERM that drained cleanly is a normal exit (0), not an error. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

// One JSON line per log entry (and per request); SIGINT/SIGTERM close the listener and let requests finish.
Layer.launch(ServerLive.pipe(Layer.provide(Logger.layer([Logger.consoleJson])))).pipe(NodeRuntime.runMain({ teardown }))
