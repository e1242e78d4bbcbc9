import { Effect, Option } from "effect"
import { spawn } from "node:child_process"
import { CliEnv } from "./Settings.ts"

/**
 * Best effort: opens `address` with `BROWSER` (a command, given the address as its last argument), else the
 * platform's opener. The caller prints the address either way, so a machine without a browser loses nothing.
 */
export const launchBrowser = (address: string) =>
  Effect.gen(function* () {
    const env = yield* CliEnv
    yield* Effect.sync(() => {
      const [command, args] = Option.isSome(env.browser)
        ? [env.browser.value, [address]]
        : process.platform === "darwin"
          ? ["open", [address]]
          : process.platform === "win32"
            ? ["cmd", ["/c", "start", "", address]]
            : ["xdg-open", [address]]
      try {
        const child = spawn(command, args, { stdio: "ignore", detached: true })
        child.on("error", () => {})
        child.unref()
      } catch {
        // No opener: the printed address is enough.
      }
    })
  })
