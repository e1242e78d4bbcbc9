#!/usr/bin/env node
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Exit } from "effect"
import { run } from "../Cli.ts"

// The exit code is the command's (0, 1 for a failure, 2 for a usage error, 130 for Ctrl-C); stdout is flushed first.
NodeRuntime.runMain(run(process.argv.slice(2)), {
  disableErrorReporting: true,
  teardown: (exit) => {
    const code = Exit.isSuccess(exit) ? (exit.value as number) : Cause.hasInterruptsOnly(exit.cause) ? 130 : 1
    process.stdout.write("", () => process.exit(code))
  }
})
