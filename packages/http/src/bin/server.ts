#!/usr/bin/env node
import { NodeRuntime } from "@effect/platform-node"
import { Layer, Logger } from "effect"
import { ServerLive } from "../server/Server.ts"

// One JSON line per log entry (and per request); SIGINT/SIGTERM close the listener and let requests finish.
Layer.launch(ServerLive.pipe(Layer.provide(Logger.layer([Logger.consoleJson])))).pipe(NodeRuntime.runMain)
