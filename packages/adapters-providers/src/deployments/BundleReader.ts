import { isUtf8 } from "node:buffer"
import type { Readable } from "node:stream"
import * as Zlib from "node:zlib"
import { NodeStream } from "@effect/platform-node"
import { Deployments, type Errors } from "@hostplane/core"
import { Cause, Effect, Fiber, Layer, Option, Predicate, Queue, Result, Stream } from "effect"
import * as TarStream from "tar-stream"

export interface Options {
  /** Limits to enforce instead of decisions.md's (tests use small ones); each one left out keeps its default. */
  readonly limits?: Partial<Deployments.BundleLimits>
}

type Refusal = Errors.InvalidBundle | Errors.PayloadTooLarge

/** tar-stream also sets `byteOffset`, where the entry's bytes start in the tar; its typings omit it. */
type Header = TarStream.Header & { readonly byteOffset?: number }

interface TarEntry {
  readonly header: Header
  /** Reads the entry's bytes to their end and keeps them; the next entry is parsed once these are read or left. */
  readonly read: Effect.Effect<Uint8Array, Errors.InvalidBundle>
  /** Reads the entry's bytes to their end and keeps none. */
  readonly skip: Effect.Effect<void, Errors.InvalidBundle>
}

/**
 * Reads one entry to its end with one promise (an entry is 1 KiB to a few MiB; 20,000 of them may arrive, and a
 * stream per entry would cost more than its few chunks). `keep` gathers the bytes: the manifest only.
 */
const readEntry = (entry: AsyncIterable<unknown>, failure: (error: unknown) => Errors.InvalidBundle, keep: boolean) =>
  Effect.tryPromise({
    try: async () => {
      const chunks: Array<Uint8Array> = []
      // tar-stream's entries yield Buffers; its typings say unknown.
      for await (const chunk of entry) if (keep) chunks.push(chunk as Uint8Array)
      return Buffer.concat(chunks)
    },
    catch: failure
  })

interface Inspection {
  readonly files: ReadonlyArray<Deployments.BundleFile>
  readonly uncompressedBytes: number
  readonly manifest: Deployments.Manifest
}

const gzipFailure = (error: unknown) =>
  Predicate.hasProperty(error, "code") && error.code === "Z_BUF_ERROR"
    ? Deployments.invalidBundle("truncated", "the gzip stream ends early")
    : Deployments.invalidBundle("corrupt_gzip", "the body is not a valid gzip stream")

const tarFailure = (error: unknown) =>
  error instanceof Error && error.message === "Unexpected end of data"
    ? Deployments.invalidBundle("truncated", "the tar archive ends inside an entry")
    : Deployments.invalidBundle("corrupt_tar", "the gzip stream does not hold a valid tar archive")

// Every chunk of the inflated tar costs a few fiber hops (the limit check, the tee, the tar parser, the hash and the
// write). zlib hands out one view per input chunk, and a body arrives in socket reads of up to 64 KiB (1,500 for a
// 100 MiB bundle), so the views are joined into 1 MiB chunks before those stages; zlib's output buffer is 1 MiB too
// (its default 16 KiB costs a thread-pool round trip each). The body itself is not gathered: that would read ahead of
// the limit checks.
const inflatedChunkBytes = 1024 * 1024

interface Gathered {
  chunks: Array<Uint8Array>
  bytes: number
}

const joined = (gathered: Gathered): Uint8Array => {
  const chunks = gathered.chunks
  gathered.chunks = []
  gathered.bytes = 0
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
}

/** `next` when it starts in the same buffer right where `last` ends: one view over both, no copy. */
const adjacent = (last: Uint8Array, next: Uint8Array) =>
  last.buffer === next.buffer && last.byteOffset + last.byteLength === next.byteOffset
    ? new Uint8Array(last.buffer, last.byteOffset, last.byteLength + next.byteLength)
    : undefined

/**
 * Joins chunks into chunks of about `bytes`. zlib hands out consecutive views of one output buffer, which join as
 * views; only what spans two buffers is copied, and a gathered run of at least half `bytes` is passed on as it is
 * rather than copied onto the next buffer's start.
 */
const coalesce = (bytes: number) =>
  Stream.mapAccumArray(
    (): Gathered => ({ chunks: [], bytes: 0 }),
    (gathered, chunks: ReadonlyArray<Uint8Array>) => {
      const out: Array<Uint8Array> = []
      for (const chunk of chunks) {
        const last = gathered.chunks.length === 0 ? undefined : gathered.chunks[gathered.chunks.length - 1]
        const view = last === undefined ? undefined : adjacent(last, chunk)
        if (view !== undefined) {
          gathered.chunks[gathered.chunks.length - 1] = view
        } else {
          if (gathered.bytes >= bytes / 2) out.push(joined(gathered))
          gathered.chunks.push(chunk)
        }
        gathered.bytes += chunk.byteLength
        if (gathered.bytes >= bytes) out.push(joined(gathered))
      }
      return [gathered, out] as const
    },
    { onHalt: (gathered) => (gathered.bytes > 0 ? [joined(gathered)] : []) }
  )

const gunzip = <E>(compressed: Stream.Stream<Uint8Array, E>) =>
  NodeStream.pipeThroughDuplex(compressed, {
    evaluate: () => Zlib.createGunzip({ chunkSize: inflatedChunkBytes }),
    onError: gzipFailure
  })

// latin1 keeps the raw bytes of ustar and GNU names, so that non-UTF-8 names can be told apart (entryName).
const extractOptions = { filenameEncoding: "latin1", highWaterMark: 64 * 1024 }

/** Writes one chunk to the parser, waiting while its buffer is full; a destroyed parser reports why on its entries. */
const writeTo = (extract: TarStream.Extract, chunk: Uint8Array) =>
  Effect.callback<void>((resume) => {
    if (extract.destroyed || extract.write(chunk)) return resume(Effect.void)
    const done = () => {
      extract.off("drain", done)
      extract.off("close", done)
      resume(Effect.void)
    }
    extract.on("drain", done)
    extract.on("close", done)
    return Effect.sync(() => {
      extract.off("drain", done)
      extract.off("close", done)
    })
  })

/**
 * Runs `f` on each entry of an (inflated) tar stream, one at a time, with bounded buffering. Parsing and `f` run
 * side by side, so a failure of either (a broken gzip stream while `f` reads an entry, a refused entry while more
 * bytes arrive) ends both at once.
 */
const forEachEntry = <E, E2, R>(
  tar: Stream.Stream<Uint8Array, E>,
  f: (entry: TarEntry) => Effect.Effect<void, E2, R>
): Effect.Effect<void, E | E2 | Errors.InvalidBundle, R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const extract = TarStream.extract(extractOptions)
      // The parser's own error says why it stopped. An entry whose reading starts after the parser failed (the last
      // bytes can arrive before the entry is read) only reports that it was destroyed; the parser emits its error
      // before that entry closes.
      let parserError: unknown
      extract.on("error", (error) => {
        parserError = error
      })
      const failure = (error: unknown) => tarFailure(parserError ?? error)
      yield* Effect.addFinalizer(() => Effect.sync(() => extract.destroy()))
      const feed = Stream.runForEach(tar, (chunk) => writeTo(extract, chunk)).pipe(
        Effect.andThen(Effect.sync(() => extract.end(undefined)))
      )
      const consume = Stream.fromAsyncIterable(extract, failure).pipe(
        Stream.runForEach((entry) =>
          f({
            header: entry.header,
            read: readEntry(entry, failure, true),
            skip: Effect.asVoid(readEntry(entry, failure, false))
          })
        )
      )
      yield* Effect.all([feed, consume], { concurrency: 2, discard: true })
    })
  )

/**
 * The entry's name as UTF-8 text. Pax names arrive decoded (invalid bytes become U+FFFD); ustar and GNU names arrive
 * as latin1, one char per byte.
 */
const entryName = (header: Header): Result.Result<string, Errors.InvalidBundle> => {
  const refuse = (path: string) =>
    Result.fail(Deployments.invalidBundle("name_not_utf8", "an entry name is not valid UTF-8", { path }))
  if (Predicate.hasProperty(header.pax, "path")) {
    return header.name.includes("\uFFFD") ? refuse(header.name) : Result.succeed(header.name)
  }
  const bytes = Buffer.from(header.name, "latin1")
  return isUtf8(bytes) ? Result.succeed(bytes.toString("utf8")) : refuse(bytes.toString("utf8"))
}

const kindOf = (header: Header): Result.Result<Deployments.EntryKind, Deployments.BundleProblem> => {
  switch (header.type) {
    case "file":
      return Result.succeed("file")
    case "directory":
      return Result.succeed("directory")
    case "symlink":
      return Result.fail("symlink")
    case "link":
      return Result.fail("hard_link")
    case "character-device":
    case "block-device":
    case "fifo":
      return Result.fail("special_file")
    default:
      return Result.fail("unsupported_entry")
  }
}

const refusalMessages: Partial<Record<Deployments.BundleProblem, string>> = {
  symlink: "symbolic links are not allowed in a bundle",
  hard_link: "hard links are not allowed in a bundle",
  special_file: "devices and fifos are not allowed in a bundle",
  unsupported_entry: "the bundle holds an entry type other than file or folder",
  nul_in_name: "an entry name contains a NUL character",
  path_too_long: `an entry name is longer than ${Deployments.entryPathMaxLength} characters`,
  absolute_path: "an entry has an absolute path",
  path_traversal: "an entry path contains '..'",
  bad_path: "an entry path has an empty, '.' or backslash segment",
  outside_layout: "the bundle may hold only service.json, worker/ and assets/",
  manifest_not_file: "service.json must be a regular file"
}

/** The checked path of an entry of the bundle, `""` for its root folder. */
const checkedPath = (header: Header) =>
  Effect.fromResult(
    Result.flatMap(entryName(header), (name) =>
      Result.mapError(
        Result.flatMap(kindOf(header), (kind) =>
          Result.map(Deployments.entryPath(name, kind), (path) => ({ kind, path }))
        ),
        (reason) => Deployments.invalidBundle(reason, refusalMessages[reason] ?? reason, { path: name })
      )
    )
  )

/**
 * Inflates and checks a bundle, handing each inflated chunk to `inflated` as well; fails at the first limit crossed
 * or rule broken, reading no further.
 */
const inspect = (
  limits: Deployments.BundleLimits,
  compressed: Stream.Stream<Uint8Array>,
  tee: (chunk: Uint8Array) => Effect.Effect<void>
): Effect.Effect<Inspection, Refusal> =>
  Effect.suspend(() => {
    let uncompressedBytes = 0
    let declaredBytes = 0
    let entries = 0
    const files: Array<Deployments.BundleFile> = []
    let manifest: Uint8Array | undefined
    const seen = new Set<string>()

    const inflated = gunzip(compressed).pipe(
      Stream.tap((chunk) => {
        uncompressedBytes += chunk.byteLength
        return uncompressedBytes > limits.uncompressedBytes
          ? Effect.fail(Deployments.bundleTooLarge("uncompressed_bytes", limits.uncompressedBytes, uncompressedBytes))
          : Effect.void
      }),
      coalesce(inflatedChunkBytes),
      Stream.tap(tee)
    )

    const check = (entry: TarEntry) =>
      Effect.gen(function* () {
        entries += 1
        if (entries > limits.entries) {
          return yield* Deployments.bundleTooLarge("entries", limits.entries, entries)
        }
        declaredBytes += entry.header.size ?? 0
        if (declaredBytes > limits.uncompressedBytes) {
          return yield* Deployments.bundleTooLarge("uncompressed_bytes", limits.uncompressedBytes, declaredBytes)
        }
        const { kind, path } = yield* checkedPath(entry.header)
        if (path === "") return
        if (seen.has(path)) {
          return yield* Deployments.invalidBundle("duplicate_path", "the bundle holds the same path twice", { path })
        }
        seen.add(path)
        if (kind !== "file") return
        const offset = entry.header.byteOffset
        if (offset === undefined) return yield* Effect.die(new Error("tar-stream no longer reports entry offsets"))
        files.push({ path, offset, bytes: entry.header.size ?? 0 })
        if (path !== Deployments.manifestPath) return yield* entry.skip
        if ((entry.header.size ?? 0) > Deployments.manifestMaxBytes) {
          return yield* Deployments.invalidBundle(
            "manifest_too_large",
            `service.json is larger than ${Deployments.manifestMaxBytes} bytes`,
            { limit: Deployments.manifestMaxBytes }
          )
        }
        manifest = yield* entry.read
      })

    return forEachEntry(inflated, check).pipe(
      Effect.andThen(
        Effect.suspend(() =>
          manifest === undefined
            ? Effect.fail(Deployments.invalidBundle("manifest_missing", "the bundle has no service.json"))
            : Deployments.decodeManifest(manifest)
        )
      ),
      Effect.map((decoded) => ({ files, uncompressedBytes, manifest: decoded }))
    )
  })

export const make = (
  store: Deployments.ArtifactStore["Service"],
  options: Options = {}
): Deployments.BundleReader["Service"] => {
  const limits: Deployments.BundleLimits = { ...Deployments.BundleLimits, ...options.limits }

  // One pass: the body is hashed and stored as it arrives, inflated once, and the inflated tar is parsed and stored
  // side by side (the edge serves single files from it); nothing is read back.
  const read = Effect.fn("BundleReader.read")(function* <E>(body: Stream.Stream<Uint8Array, E>) {
    const inflating = yield* Queue.bounded<Uint8Array, Cause.Done>(8)
    const inflated = yield* Queue.bounded<Uint8Array, Cause.Done>(8)
    const inspection = yield* Effect.forkScoped(
      inspect(limits, Stream.fromQueue(inflating), (chunk) => Queue.offer(inflated, chunk).pipe(Effect.asVoid))
    )
    // Each store sees its bytes only as the inspection accepts them, and their end only after the verdict: a refused
    // bundle fails both streams, so both stores remove their temporary objects and commit nothing.
    const afterVerdict = <A, E2>(stream: Stream.Stream<A, E2>) =>
      stream.pipe(
        Stream.concat(Stream.fromEffectDrain(Fiber.join(inspection))),
        Stream.interruptWhen(Fiber.join(inspection).pipe(Effect.andThen(Effect.never)))
      )
    const tar = yield* Effect.forkScoped(store.put(afterVerdict(Stream.fromQueue(inflated))))
    let compressedBytes = 0
    const accepted = body.pipe(
      Stream.tap((chunk) => {
        compressedBytes += chunk.byteLength
        return compressedBytes > limits.compressedBytes
          ? Effect.fail(Deployments.bundleTooLarge("compressed_bytes", limits.compressedBytes, compressedBytes))
          : Queue.offer(inflating, chunk)
      }),
      Stream.onEnd(Queue.end(inflating)),
      afterVerdict
    )
    const stored = yield* store.put(accepted)
    const inspected = yield* Fiber.join(inspection)
    yield* Queue.end(inflated)
    const storedTar = yield* Fiber.join(tar)
    if (Option.isNone(yield* store.index(stored.digest))) {
      yield* store.putIndex(stored.digest, { tar: storedTar.digest, files: inspected.files })
    }
    return {
      digest: stored.digest,
      bytes: stored.bytes,
      files: inspected.files.length,
      uncompressedBytes: inspected.uncompressedBytes,
      manifest: inspected.manifest
    }
  }, Effect.scoped)

  return Deployments.BundleReader.of({ limits, read })
}

/** The reader over the host's ArtifactStore. */
export const layer = (options: Options = {}): Layer.Layer<Deployments.BundleReader, never, Deployments.ArtifactStore> =>
  Layer.effect(
    Deployments.BundleReader,
    Effect.gen(function* () {
      return make(yield* Deployments.ArtifactStore, options)
    })
  )

/** A Node request body as the reader's input; a body that breaks off is a `truncated` bundle. */
export const bodyFrom = (readable: Readable): Stream.Stream<Uint8Array, Errors.InvalidBundle> =>
  NodeStream.fromReadable({
    evaluate: () => readable,
    onError: () => Deployments.invalidBundle("truncated", "the upload broke off before the end of the bundle")
  })
