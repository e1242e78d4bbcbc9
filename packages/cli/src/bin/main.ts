import { Cause, Effect, Exit } from "effect"
import { run } from "../Cli.ts"
import { interrupted } from "../Interrupts.ts"

// Run by bin/hostplane.js from the bundle. The exit code is the command's (0, 1 for a failure, 2 for a usage error, 130 for Ctrl-C); stdout is flushed first.
const fiber = Effect.runFork(run(process.argv.slice(2)))
const onSignal = () => {
  if (!interrupted()) fiber.interruptUnsafe(fiber.id)
}
process.on("SIGINT", onSignal)
process.on("SIGTERM", () => fiber.interruptUnsafe(fiber.id))
fiber.addObserver((exit) => {
  const code = Exit.isSuccess(exit) ? exit.value : Cause.hasInterruptsOnly(exit.cause) ? 130 : 1
  process.stdout.write("", () => process.exit(code))
})
