import type { ErrorInfo } from "@hostplane/client"
import { Effect, Schema } from "effect"
import { CliError } from "effect/cli"

/** A failure the CLI finds itself (no login, no project, a folder the bundle layout refuses), with a `code` like the API's. */
export class CliFailure extends Schema.TaggedError<CliFailure>()("CliFailure", {
  code: Schema.String,
  message: Schema.String,
  details: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
}) {}

/** Results go to stdout; progress, notes and errors to stderr, so `--json` output stays parseable. */
export const out = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))
export const note = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))

/** `--json`: the value as JSON; else the human lines. */
export const show = (json: boolean, value: unknown, lines: () => ReadonlyArray<string>) =>
  json ? out(JSON.stringify(value, null, 2)) : Effect.forEach(lines(), out, { discard: true })

/** Columns padded to their widest cell. */
export const table = (rows: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string> => {
  const widths = rows.reduce<Array<number>>(
    (acc, row) => row.map((cell, index) => Math.max(acc[index] ?? 0, cell.length)),
    []
  )
  return rows.map((row) =>
    row
      .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index]!)))
      .join("  ")
      .trimEnd()
  )
}

/** A failure's `code` and message: the CLI's own, else what the client reads from the wire (loaded only then). */
const infoOf = (error: unknown): Effect.Effect<ErrorInfo> =>
  error instanceof CliFailure
    ? Effect.succeed({ status: undefined, code: error.code, message: error.message, details: error.details })
    : Effect.map(
        Effect.promise(() => import("@hostplane/client/ClientOf")),
        (module) => module.errorInfo(error)
      )

/**
 * How a failed command ends: one line `error <code>: <message>` on stderr (`{"error":{...}}` with `--json`) and the
 * exit status: 2 for a usage error (code `usage`: an unknown command or flag, a missing or bad argument), 1 for
 * anything else.
 */
export const report = (error: unknown, json: boolean): Effect.Effect<number> => {
  if (CliError.isCliError(error) && error._tag === "ShowHelp" && error.errors.length === 0) return Effect.succeed(0)
  if (CliError.isCliError(error)) {
    const path = error._tag === "ShowHelp" ? error.commandPath.join(" ") : "hostplane"
    const first = error._tag === "ShowHelp" ? error.errors[0]! : error
    const info = { code: "usage", message: `${firstLine(first.message)} (see \`${path} --help\`)` }
    return Effect.as(note(json ? JSON.stringify({ error: info }) : `error ${info.code}: ${info.message}`), 2)
  }
  return Effect.flatMap(infoOf(error), (info) => {
    const line = json
      ? JSON.stringify({ error: { code: info.code, message: info.message, details: info.details } })
      : [`error ${info.code}: ${info.message}`, ...detailLines(info.details)].join("\n")
    return Effect.as(note(line), info.code === "usage" ? 2 : 1)
  })
}

const firstLine = (text: string) => text.trim().split("\n")[0]!.trim()

const detailLines = (details: ErrorInfo["details"]): ReadonlyArray<string> =>
  details === undefined
    ? []
    : Object.entries(details).map(
        ([key, value]) => `  ${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`
      )
