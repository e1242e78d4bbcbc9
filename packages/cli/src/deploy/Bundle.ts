import { Deployments } from "@hostplane/core"
import { Effect, Result, Stream } from "effect"
import { createReadStream, type Stats } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { pipeline } from "node:stream/promises"
import { createGzip } from "node:zlib"
import * as TarStream from "tar-stream"
import { CliFailure } from "../Output.ts"

/** One entry of the bundle, in the order it is written (a folder before what it holds). */
export interface Entry {
  readonly path: string
  readonly kind: Deployments.EntryKind
  readonly size: number
  readonly mode: number
  readonly mtime: Date
}

/** A folder read for a deploy: the manifest, the entries to pack, and what the layout leaves out. */
export interface Scan {
  readonly dir: string
  readonly manifest: Deployments.Manifest
  readonly entries: ReadonlyArray<Entry>
  /** Bytes of the files, before compression. */
  readonly fileBytes: number
  /** Top-level names (dot files aside) that are not `service.json`, `worker/` or `assets/`: never uploaded. */
  readonly skipped: ReadonlyArray<string>
}

const roots = ["worker", "assets"] as const

const kindProblem = (stats: Stats): Deployments.BundleProblem | undefined =>
  stats.isSymbolicLink()
    ? "symlink"
    : stats.isFIFO() || stats.isCharacterDevice() || stats.isBlockDevice()
      ? "special_file"
      : stats.isFile() || stats.isDirectory()
        ? undefined
        : "unsupported_entry"

/** Tar size of the entries once inflated: a 512-byte header per entry, file bodies padded to 512, two end blocks. */
const tarBytes = (entries: ReadonlyArray<Entry>) =>
  entries.reduce((sum, entry) => sum + 512 + Math.ceil(entry.size / 512) * 512, 1024)

/**
 * Reads `dir` the way the server will read its bundle, before any byte is sent: the manifest (`decodeManifest`), each
 * path under `worker/` and `assets/` (`entryPath`: the server's own layout rule), and the limits it can know ahead
 * (entries, inflated size). Every refused file is listed in one `invalid_bundle` failure.
 */
export const scanFolder = (dir: string): Effect.Effect<Scan, CliFailure> =>
  Effect.gen(function* () {
    const root = Path.resolve(dir)
    const top = yield* Effect.tryPromise({
      try: () => Fs.readdir(root, { withFileTypes: true }),
      catch: () => new CliFailure({ code: "no_folder", message: `${dir} is not a folder that can be read` })
    })
    const manifestEntry = top.find((entry) => entry.name === Deployments.manifestPath)
    if (manifestEntry === undefined) {
      return yield* new CliFailure({
        code: "invalid_bundle",
        message: `${Path.join(dir, Deployments.manifestPath)} is missing: a bundle needs its manifest`,
        details: { reason: "manifest_missing" }
      })
    }
    if (!manifestEntry.isFile()) {
      return yield* new CliFailure({
        code: "invalid_bundle",
        message: `${Deployments.manifestPath} must be a regular file`,
        details: { reason: "manifest_not_file" }
      })
    }
    const manifestStats = yield* Effect.promise(() => Fs.stat(Path.join(root, Deployments.manifestPath)))
    if (manifestStats.size > Deployments.manifestMaxBytes) {
      return yield* new CliFailure({
        code: "invalid_bundle",
        message: `${Deployments.manifestPath} is larger than ${Deployments.manifestMaxBytes} bytes`,
        details: { reason: "manifest_too_large" }
      })
    }
    const manifestBytes = yield* Effect.promise(() => Fs.readFile(Path.join(root, Deployments.manifestPath)))
    const manifest = yield* Deployments.decodeManifest(manifestBytes).pipe(
      Effect.mapError(
        (error) =>
          new CliFailure({
            code: "invalid_bundle",
            message: error.message,
            ...(error.details === undefined ? {} : { details: error.details })
          })
      )
    )

    const entries: Array<Entry> = [
      {
        path: Deployments.manifestPath,
        kind: "file",
        size: manifestStats.size,
        mode: manifestStats.mode,
        mtime: manifestStats.mtime
      }
    ]
    const problems: Array<{ readonly path: string; readonly reason: Deployments.BundleProblem }> = []
    const walk = (relative: string): Effect.Effect<void> =>
      Effect.gen(function* () {
        const stats = yield* Effect.promise(() => Fs.lstat(Path.join(root, relative)))
        const problem = kindProblem(stats)
        if (problem !== undefined) return void problems.push({ path: relative, reason: problem })
        const kind: Deployments.EntryKind = stats.isDirectory() ? "directory" : "file"
        const checked = Deployments.entryPath(kind === "directory" ? `${relative}/` : relative, kind)
        if (Result.isFailure(checked)) return void problems.push({ path: relative, reason: checked.failure })
        entries.push({
          path: relative,
          kind,
          size: kind === "file" ? stats.size : 0,
          mode: stats.mode,
          mtime: stats.mtime
        })
        if (kind === "directory") {
          const names = yield* Effect.promise(() => Fs.readdir(Path.join(root, relative)))
          for (const name of names.sort()) yield* walk(`${relative}/${name}`)
        }
      })
    for (const name of roots) {
      const entry = top.find((candidate) => candidate.name === name)
      if (entry !== undefined) yield* walk(name)
    }
    const allowed = new Set<string>([Deployments.manifestPath, ...roots])
    const skipped = top
      .map((entry) => entry.name)
      .filter((name) => !allowed.has(name) && !name.startsWith("."))
      .sort()

    if (problems.length > 0) {
      return yield* new CliFailure({
        code: "invalid_bundle",
        message: `${problems.length} ${problems.length === 1 ? "entry" : "entries"} of ${dir} cannot be deployed: ${problems
          .slice(0, 20)
          .map((problem) => `${problem.path} (${problem.reason})`)
          .join(", ")}${problems.length > 20 ? ", ..." : ""}`,
        details: { reason: problems[0]!.reason, problems }
      })
    }
    const limits = Deployments.BundleLimits
    if (entries.length > limits.entries) {
      return yield* new CliFailure({
        code: "payload_too_large",
        message: `${dir} holds ${entries.length} entries; a bundle may hold ${limits.entries}`,
        details: { measure: "entries", limit: limits.entries, value: entries.length }
      })
    }
    const inflated = tarBytes(entries)
    if (inflated > limits.uncompressedBytes) {
      return yield* new CliFailure({
        code: "payload_too_large",
        message: `${dir} makes a tar of ${inflated} bytes; a bundle may inflate to ${limits.uncompressedBytes}`,
        details: { measure: "uncompressed_bytes", limit: limits.uncompressedBytes, value: inflated }
      })
    }
    const fileBytes = entries.reduce((sum, entry) => sum + entry.size, 0)
    return { dir: root, manifest, entries, fileBytes, skipped }
  })

/** Counts what the bundle stream has read from files and sent, for the progress display. */
export interface Counter {
  fileBytesRead: number
  sentBytes: number
}

/**
 * The gzipped tar of a scanned folder as a stream, produced while it is consumed (the upload's pace): one file open
 * at a time, never the whole bundle in memory or on disk. A file that changes size meanwhile fails the stream.
 */
export const bundleStream = (scan: Scan, counter: Counter): Stream.Stream<Uint8Array, CliFailure> =>
  Stream.suspend(() => {
    const pack = TarStream.pack()
    const gzip = createGzip({ level: 6 })
    const produce = async () => {
      for (const entry of scan.entries) {
        const header = {
          name: entry.kind === "directory" ? `${entry.path}/` : entry.path,
          type: entry.kind,
          mode: entry.kind === "directory" ? 0o755 : entry.mode & 0o111 ? 0o755 : 0o644,
          mtime: entry.mtime,
          ...(entry.kind === "file" ? { size: entry.size } : {})
        } as const
        if (entry.kind === "directory") {
          await new Promise<void>((resolve, reject) =>
            pack.entry(header, (error) => (error ? reject(error) : resolve()))
          )
          continue
        }
        const sink = pack.entry(header)
        const source = createReadStream(Path.join(scan.dir, entry.path))
        source.on("data", (chunk) => (counter.fileBytesRead += chunk.length))
        await pipeline(source, sink)
      }
      pack.finalize()
    }
    produce().catch((error: unknown) => pack.destroy(error instanceof Error ? error : new Error(String(error))))
    const compressed = pack.pipe(gzip)
    pack.on("error", (error) => gzip.destroy(error))
    return Stream.fromAsyncIterable(
      compressed as AsyncIterable<Uint8Array>,
      (cause) =>
        new CliFailure({
          code: "bundle_read_failed",
          message: `reading ${scan.dir} failed while uploading: ${cause instanceof Error ? cause.message : String(cause)}`
        })
    ).pipe(
      Stream.tap((chunk) => Effect.sync(() => void (counter.sentBytes += chunk.length))),
      Stream.ensuring(Effect.sync(() => void compressed.destroy()))
    )
  })
