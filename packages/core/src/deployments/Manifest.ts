import { Effect, Result, Schema, SchemaIssue } from "effect"
import { InvalidBundle, PayloadTooLarge } from "../errors/Errors.ts"

/** Where the manifest sits in a bundle. */
export const manifestPath = "service.json"

/** `service.json` of spec 4.3 and decisions.md part 4: unknown keys are ignored and dropped. */
export const Manifest = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  main: Schema.optionalKey(Schema.String),
  database: Schema.optionalKey(Schema.Boolean),
  storage: Schema.optionalKey(Schema.Boolean),
  email: Schema.optionalKey(Schema.Boolean),
  auth: Schema.optionalKey(Schema.Boolean),
  ai: Schema.optionalKey(Schema.Boolean),
  /** workerd's compatibility date for the worker (decisions.md part 13); default {@link defaultCompatibilityDate}. */
  compatibilityDate: Schema.optionalKey(
    Schema.String.check(
      Schema.makeFilter((date) => isCalendarDate(date) || "a calendar date written YYYY-MM-DD", {
        title: "YYYY-MM-DD"
      })
    )
  ),
  compatibilityFlags: Schema.optionalKey(
    Schema.Array(Schema.String.check(Schema.isPattern(/^[a-z0-9_]{1,100}$/))).check(Schema.isMaxLength(100))
  ),
  /** Every path goes to the worker, assets only through `env.ASSETS`. */
  workerFirst: Schema.optionalKey(Schema.Boolean)
})
export type Manifest = typeof Manifest.Type

/** The compatibility date a manifest without one runs at (decisions.md part 13). */
export const defaultCompatibilityDate = "2026-11-01"

/** `YYYY-MM-DD` naming a day that exists. */
const isCalendarDate = (text: string): boolean => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false
  const parsed = new Date(`${text}T00:00:00Z`)
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === text
}

/**
 * The worker's entry module among a bundle's file paths (decisions.md part 13): `main` relative to `worker/` (a `main`
 * already starting `worker/` is taken as written), else `worker/index.js`, else `worker/index.mjs`. `undefined` when
 * `worker/` holds no file (an assets-only bundle); `worker_main_missing` when it holds files but no entry.
 */
export const workerEntry = (
  manifest: Manifest,
  paths: ReadonlyArray<string>
): Result.Result<string | undefined, InvalidBundle> => {
  const workerFiles = paths.filter((path) => path.startsWith("worker/"))
  const has = new Set(workerFiles)
  const candidates =
    manifest.main === undefined
      ? ["worker/index.js", "worker/index.mjs"]
      : [
          `worker/${manifest.main.replace(/^\.\//, "")}`,
          ...(manifest.main.startsWith("worker/") ? [manifest.main] : [])
        ]
  const found = candidates.find((candidate) => has.has(candidate))
  if (found !== undefined) return Result.succeed(found)
  if (workerFiles.length === 0 && manifest.main === undefined) return Result.succeed(undefined)
  return Result.fail(
    invalidBundle(
      "worker_main_missing",
      manifest.main === undefined
        ? "worker/ has files but neither worker/index.js nor worker/index.mjs"
        : `main names no file under worker/: ${manifest.main}`,
      { path: candidates[0] }
    )
  )
}

/** Size limits of one uploaded bundle. */
export interface BundleLimits {
  /** Bytes of the gzipped tar as uploaded. */
  readonly compressedBytes: number
  /** Bytes of the tar once inflated, headers and padding included. */
  readonly uncompressedBytes: number
  /** Tar entries of every kind (files and folders). */
  readonly entries: number
}

/** decisions.md part 3: beyond any of them the upload is 413. */
export const BundleLimits: BundleLimits = {
  compressedBytes: 100 * 1024 * 1024,
  uncompressedBytes: 500 * 1024 * 1024,
  entries: 20_000
}

/** A manifest larger than this is refused unread (`manifest_too_large`). */
export const manifestMaxBytes = 64 * 1024

/** An entry name longer than this (UTF-16 units) is refused (`path_too_long`); it bounds what a reader holds per entry. */
export const entryPathMaxLength = 1024

/** Which limit a 413 crossed (`details.measure`). */
export const BundleMeasure = Schema.Literals(["compressed_bytes", "uncompressed_bytes", "entries"])
export type BundleMeasure = typeof BundleMeasure.Type

/** `details.reason` of a 400 `invalid_bundle`. */
export const BundleProblem = Schema.Literals([
  "corrupt_gzip",
  "corrupt_tar",
  "truncated",
  "absolute_path",
  "path_traversal",
  "bad_path",
  "path_too_long",
  "nul_in_name",
  "name_not_utf8",
  "outside_layout",
  "duplicate_path",
  "symlink",
  "hard_link",
  "special_file",
  "unsupported_entry",
  "manifest_missing",
  "manifest_not_file",
  "manifest_too_large",
  "manifest_not_json",
  "manifest_invalid",
  "worker_main_missing",
  "worker_invalid"
])
export type BundleProblem = typeof BundleProblem.Type

export type EntryKind = "file" | "directory"

/**
 * The layout rule of spec 4.3: a bundle holds `service.json` (a file), `worker/...` and `assets/...`, nothing else.
 * Answers the entry's path with any leading `./` and a folder's trailing `/` removed (`""` for the bundle's own root
 * folder, which tar tools write as `./`), or why the name is refused.
 */
export const entryPath = (name: string, kind: EntryKind): Result.Result<string, BundleProblem> => {
  if (name.includes("\u0000")) return Result.fail("nul_in_name")
  if (name.length > entryPathMaxLength) return Result.fail("path_too_long")
  if (name.startsWith("/")) return Result.fail("absolute_path")
  if (name.includes("\\")) return Result.fail("bad_path")
  let path = name
  while (path.startsWith("./")) path = path.slice(2)
  if (kind === "directory" && path.endsWith("/")) path = path.slice(0, -1)
  if (path === "" || path === ".") return kind === "directory" ? Result.succeed("") : Result.fail("bad_path")
  const segments = path.split("/")
  if (segments.includes("..")) return Result.fail("path_traversal")
  if (segments.some((segment) => segment === "" || segment === ".")) return Result.fail("bad_path")
  const root = segments[0]
  if (root === manifestPath && segments.length === 1) {
    return kind === "file" ? Result.succeed(path) : Result.fail("manifest_not_file")
  }
  if ((root === "worker" || root === "assets") && (segments.length > 1 || kind === "directory")) {
    return Result.succeed(path)
  }
  return Result.fail("outside_layout")
}

/** 400 `invalid_bundle` with `details.reason` and what locates the problem (`path`, `issues`). */
export const invalidBundle = (
  reason: BundleProblem,
  message: string,
  extra: Readonly<Record<string, unknown>> = {}
): InvalidBundle => new InvalidBundle({ message, details: { ...extra, reason } })

/** 413 with `details: { measure, limit, value }`; `value` is what had been counted when reading stopped. */
export const bundleTooLarge = (measure: BundleMeasure, limit: number, value: number): PayloadTooLarge =>
  new PayloadTooLarge({
    message: `bundle exceeds the limit of ${limit} ${measure.replace("_", " ")}`,
    details: { measure, limit, value }
  })

const utf8 = new TextDecoder("utf-8", { fatal: true })
const decodeJson = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.Unknown))
const decodeFields = Schema.decodeUnknownEffect(Manifest, { errors: "all" })
const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** The manifest from the bytes of `service.json`: UTF-8 JSON whose known keys have the right types. */
export const decodeManifest = (bytes: Uint8Array): Effect.Effect<Manifest, InvalidBundle> =>
  Effect.try({
    try: () => utf8.decode(bytes),
    catch: () => invalidBundle("manifest_not_json", "service.json is not UTF-8 text")
  }).pipe(
    Effect.flatMap((text) =>
      Effect.mapError(decodeJson(text), () => invalidBundle("manifest_not_json", "service.json is not valid JSON"))
    ),
    Effect.flatMap((json) =>
      Effect.mapError(decodeFields(json), (error) =>
        invalidBundle("manifest_invalid", "service.json does not match the manifest schema", {
          issues: formatIssues(error.issue).issues.map((issue) => ({
            path: (issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment)),
            message: issue.message
          }))
        })
      )
    )
  )
