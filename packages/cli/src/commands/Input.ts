import { Effect, Redacted } from "effect"
import { Prompt } from "effect/cli"
import { CliFailure } from "../Output.ts"

/** All of stdin as UTF-8 text. */
export const readStdin = Effect.promise(async () => {
  const chunks: Array<Buffer> = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
})

/**
 * A secret value, never from an argument (it would sit in the shell history and the process list): piped stdin
 * (one trailing newline dropped, as `echo` adds it), else a prompt that does not echo.
 */
export const readSecretInput = (what: string) =>
  Effect.gen(function* () {
    if (!process.stdin.isTTY) {
      const text = yield* readStdin
      return text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text
    }
    const value = yield* Prompt.run(Prompt.Hidden({ message: `${what} (input hidden):` })).pipe(
      Effect.mapError(() => new CliFailure({ code: "cancelled", message: `no ${what} entered` }))
    )
    return Redacted.value(value)
  })
