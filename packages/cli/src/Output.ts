import { errorInfo, type ErrorInfo } from "@hostplane/client"
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

const infoOf = (error: unknown): ErrorInfo =>
  error instanceof CliFailure
    ? { status: undefined, code: error.code, message: error.message, details: error.details }
    : errorInfo(error)

/**
 * How a failed command ends: the `code` and message on stderr (JSON with `--json`) and the exit status: 2 for a
 * usage error (already shown with the help by the parser), 1 for anything else.
 */
export const report = (error: unknown, json: boolean): Effect.Effect<number> => {
  if (CliError.isCliError(error)) {
    if (error._tag === "ShowHelp") return Effect.succeed(error.errors.length === 0 ? 0 : 2)
    return Effect.succeed(2)
  }
  const info = infoOf(error)
  const line = json
    ? JSON.stringify({ error: { code: info.code, message: info.message, details: info.details } })
    : [`error ${info.code}: ${info.message}`, ...detailLines(info.details)].join("\n")
  return Effect.as(note(line), 1)
}

const detailLines = (details: ErrorInfo["details"]): ReadonlyArray<string> =>
  details === undefined
    ? []
    : Object.entries(details).map(
        ([key, value]) => `  ${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`
      )
