#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, Logger, Runtime } from "effect"
import { remoteNodeConfig, serveRemoteNode } from "../remote/RemoteNode.ts"

/** A stop by SIGINT/SIGTERM is a normal exit (0), not an error. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

const jsonLines = Logger.layer([Logger.consoleJson])

// `hostplane-node`: the edge and the worker runtime of a node on another machine, from SERVICE_CONTROL_URL and
// SERVICE_NODE_TOKEN alone (docs/node.md). SIGINT/SIGTERM stop the edge and the runtime's workerd processes.
Effect.gen(function* () {
  const options = yield* remoteNodeConfig
  yield* serveRemoteNode(options)
  return yield* Effect.never
}).pipe(
  Effect.scoped,
  Effect.tapCause((cause) =>
    Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError("hostplane node stopped on an error", cause)
  ),
  Effect.provide(Layer.mergeAll(jsonLines)),
  NodeRuntime.runMain({ teardown, disableErrorReporting: true })
)
