import { isUtf8 } from "node:buffer"
import type { Readable } from "node:stream"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import * as Zlib from "node:zlib"
import { NodeStream } from "@effect/platform-node"
import { Deployments, type Errors } from "@hostplane/core"
import { Cause, Effect, Fiber, Layer, Option, Predicate, Queue, Result, Stream } from "effect"
import { type Header, type ScanFailure, TarScanner, type Verdict } from "./TarScanner.ts"

export interface Options {
  /** Limits to enforce instead of decisions.md's (tests use small ones); each one left out keeps its default. */
  readonly limits?: Partial<Deployments.BundleLimits>
}

type Refusal = Errors.InvalidBundle | Errors.PayloadTooLarge

interface Inspection {
  readonly files: ReadonlyArray<Deployments.BundleFile>
  readonly uncompressedBytes: number
  readonly manifest: Deployments.Manifest
}

const gzipFailure = (error: unknown) =>
  Predicate.hasProperty(error, "code") && error.code === "Z_BUF_ERROR"
    ? Deployments.invalidBundle("truncated", "the gzip stream ends early")
    : Deployments.invalidBundle("corrupt_gzip", "the body is not a valid gzip stream")

const tarFailure = (failure: ScanFailure) =>
  failure === "truncated"
    ? Deployments.invalidBundle("truncated", "the tar archive ends inside an entry")
    : Deployments.invalidBundle("corrupt_tar", "the gzip stream does not hold a valid tar archive")

// zlib's output buffer, a fresh one each time zlib fills it, handed on as it is: each stage below handles a whole
// batch of them at once (one fiber step per batch, none per chunk or per entry), and the store gathers them into
// 1 MiB writes. Its default 16 KiB would cost a thread-pool round trip each (8,500 for a 134 MiB tar). It stays under
// 128 KiB, glibc's size from which a block gets a mapping of its own (fixed there by npm start's
// MALLOC_TRIM_THRESHOLD_): a 1 MiB buffer was a fresh mmap each time, faulted in page by page and unmapped once V8
// freed it, which cost more CPU than inflating (bench/README.md, `bench:upload`).
const inflatedChunkBytes = 124 * 1024

type Chunks = readonly [Uint8Array, ...Array<Uint8Array>]

/** The most compressed bytes handed to zlib at once: the socket reads that queue up (16 of up to 64 KiB). */
const joinedBytes = 1024 * 1024

/**
 * The socket reads that queued up while zlib worked on the previous ones, as one buffer: zlib takes one thread-pool
 * round trip per buffer written to it, and a body arrives in reads of up to 64 KiB. They are copied into one buffer
 * kept for the whole bundle, not into a new one each time: a fresh megabyte per write is garbage the collector frees
 * late (external memory, often after it was promoted while zlib held it on the thread pool). Reusing it is safe
 * because the gunzip below takes no write before the previous one is consumed (its high-water mark is 0, so every
 * write waits for `drain`, which zlib emits once it has read the whole input) and the writer pulls the next batch
 * only then; a batch larger than the buffer gets its own copy.
 */
const joiner = () => {
  let buffer: Buffer | undefined
  return (chunks: Chunks): Chunks => {
    if (chunks.length === 1) return chunks
    let bytes = 0
    for (const chunk of chunks) bytes += chunk.byteLength
    if (bytes > joinedBytes) return [Buffer.concat(chunks, bytes)]
    buffer ??= Buffer.allocUnsafe(joinedBytes)
    let offset = 0
    for (const chunk of chunks) {
      buffer.set(chunk, offset)
      offset += chunk.byteLength
    }
    return [buffer.subarray(0, bytes)]
  }
}

/**
 * How far zlib may inflate ahead of the stages that take its output. With Node's default (64 KiB, less than one
 * chunk) zlib stopped after every chunk until the reader pulled it, so inflating (on the thread pool) and checking,
 * hashing and writing (on the main thread) took turns whenever the main thread was late: on a busy machine, where it
 * waits for a core, the whole upload waited with it. 8 MiB let zlib keep a core busy meanwhile; the memory stays a
 * constant few MiB whatever the bundle's size.
 */
const inflatedAheadBytes = 8 * 1024 * 1024

/** The inflated chunks queued between the checks and the tar's store: as many bytes as zlib may run ahead. */
const inflatedQueueChunks = Math.ceil(inflatedAheadBytes / inflatedChunkBytes)

/**
 * V8's young-generation collection, run on request. The pass allocates about 2.4 bytes of buffers for every byte
 * uploaded (the body's reads and zlib's chunks): they die young, but only a collection frees them, and the rest of
 * the pass allocates little JS, so the young generation rarely fills. V8 (12.4) then answers the buffers' external
 * memory with full mark-compacts of the whole heap: 13-16 per 95 MiB bundle in `bench/upload-reader.ts`, about a
 * fifth of its CPU. A young collection every `youngCollectionBytes` of inflated output (well under a millisecond
 * each) frees them as they die, and no full collection is left. `gc` is V8's own, reached through a fresh context at
 * the first upload, not when the module is imported; where that fails the pass runs as before.
 */
const youngCollector = (): (() => void) => {
  try {
    V8.setFlagsFromString("--expose-gc")
    const gc: unknown = Vm.runInNewContext("gc")
    if (typeof gc === "function") return () => void gc({ type: "minor" })
  } catch {
    // No collection on request: the collector's own heuristics.
  }
  return () => undefined
}
let collector: (() => void) | undefined
const collectYoung = () => (collector ??= youngCollector())()

/**
 * Inflated bytes between two young collections. 16 MiB was no better than none: with the queues' up to 16 MiB in
 * flight, too many buffers are still live at the collection, so they are promoted and wait for a full one again.
 */
const youngCollectionBytes = 4 * 1024 * 1024

// Passed on to the stream's constructor (Node's zlib options type leaves the stream options out).
const gunzipOptions: Zlib.ZlibOptions & {
  readonly writableHighWaterMark: number
  readonly readableHighWaterMark: number
} = {
  chunkSize: inflatedChunkBytes,
  writableHighWaterMark: 0,
  readableHighWaterMark: inflatedAheadBytes
}

const gunzip = <E>(compressed: Stream.Stream<Uint8Array, E>) =>
  NodeStream.pipeThroughDuplex(compressed, {
    evaluate: () => Zlib.createGunzip(gunzipOptions),
    onError: gzipFailure
  })

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
  Result.flatMap(entryName(header), (name) =>
    Result.mapError(
      Result.flatMap(kindOf(header), (kind) =>
        Result.map(Deployments.entryPath(name, kind), (path) => ({ kind, path }))
      ),
      (reason) => Deployments.invalidBundle(reason, refusalMessages[reason] ?? reason, { path: name })
    )
  )

/**
 * Inflates and checks a bundle, handing each batch of inflated chunks to `inflated` as well; fails at the first
 * limit crossed or rule broken, reading no further. The entries are checked in order as their headers arrive.
 */
const inspect = <E>(
  limits: Deployments.BundleLimits,
  compressed: Stream.Stream<Uint8Array, E>,
  inflated: (chunks: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
): Effect.Effect<Inspection, E | Refusal> =>
  Effect.suspend(() => {
    let uncompressedBytes = 0
    let declaredBytes = 0
    let entries = 0
    const files: Array<Deployments.BundleFile> = []
    let manifest: Uint8Array | undefined
    const seen = new Set<string>()

    const check = (header: Header): Verdict<Refusal> => {
      entries += 1
      if (entries > limits.entries) return Deployments.bundleTooLarge("entries", limits.entries, entries)
      declaredBytes += header.size
      if (declaredBytes > limits.uncompressedBytes) {
        return Deployments.bundleTooLarge("uncompressed_bytes", limits.uncompressedBytes, declaredBytes)
      }
      const checked = checkedPath(header)
      if (Result.isFailure(checked)) return checked.failure
      const { kind, path } = checked.success
      if (path === "") return undefined
      if (seen.has(path)) {
        return Deployments.invalidBundle("duplicate_path", "the bundle holds the same path twice", { path })
      }
      seen.add(path)
      if (kind !== "file") return undefined
      files.push({ path, offset: header.byteOffset, bytes: header.size })
      if (path !== Deployments.manifestPath) return undefined
      if (header.size > Deployments.manifestMaxBytes) {
        return Deployments.invalidBundle(
          "manifest_too_large",
          `service.json is larger than ${Deployments.manifestMaxBytes} bytes`,
          { limit: Deployments.manifestMaxBytes }
        )
      }
      return "keep"
    }
    const scanner = new TarScanner<Refusal>(check, (bytes) => {
      manifest = bytes
      return undefined
    })

    let nextCollection = youngCollectionBytes
    const scan = (chunks: ReadonlyArray<Uint8Array>): Effect.Effect<void, Refusal> => {
      for (const chunk of chunks) {
        uncompressedBytes += chunk.byteLength
        if (uncompressedBytes >= nextCollection) {
          nextCollection = uncompressedBytes + youngCollectionBytes
          collectYoung()
        }
        if (uncompressedBytes > limits.uncompressedBytes) {
          return Effect.fail(
            Deployments.bundleTooLarge("uncompressed_bytes", limits.uncompressedBytes, uncompressedBytes)
          )
        }
        const stop = scanner.write(chunk)
        if (stop !== undefined) return Effect.fail(typeof stop === "string" ? tarFailure(stop) : stop)
      }
      return inflated(chunks)
    }

    return Stream.runForEachArray(gunzip(compressed), scan).pipe(
      Effect.andThen(
        Effect.suspend(() => {
          const end = scanner.end()
          if (end !== undefined) return Effect.fail(tarFailure(end))
          return manifest === undefined
            ? Effect.fail(Deployments.invalidBundle("manifest_missing", "the bundle has no service.json"))
            : Deployments.decodeManifest(manifest).pipe(
                Effect.tap((decoded) =>
                  Effect.fromResult(
                    Deployments.workerEntry(
                      decoded,
                      files.map((file) => file.path)
                    )
                  )
                )
              )
        })
      ),
      Effect.map((decoded) => ({ files, uncompressedBytes, manifest: decoded }))
    )
  })

export const make = (
  store: Deployments.ArtifactStore["Service"],
  options: Options = {}
): Deployments.BundleReader["Service"] => {
  const limits: Deployments.BundleLimits = { ...Deployments.BundleLimits, ...options.limits }

  // One pass: the body is hashed and stored as it arrives, inflated once, and the inflated tar is checked and stored
  // side by side (the edge serves single files from it); nothing is read back. Each stage takes what it is handed as
  // one batch (one fiber step for a batch, none per chunk or per entry).
  const read = Effect.fn("BundleReader.read")(function* <E>(body: Stream.Stream<Uint8Array, E>) {
    const inflating = yield* Queue.bounded<Uint8Array, Cause.Done>(16)
    const inflated = yield* Queue.bounded<Uint8Array, Cause.Done>(inflatedQueueChunks)
    const inspection = yield* Effect.forkScoped(
      inspect(limits, Stream.fromQueue(inflating).pipe(Stream.mapArray(joiner())), (chunks) =>
        Effect.asVoid(Queue.offerAll(inflated, chunks))
      ).pipe(Effect.tap(Queue.end(inflated)))
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
      Stream.mapArrayEffect((chunks) => {
        for (const chunk of chunks) {
          compressedBytes += chunk.byteLength
          if (compressedBytes > limits.compressedBytes) {
            return Effect.fail(Deployments.bundleTooLarge("compressed_bytes", limits.compressedBytes, compressedBytes))
          }
        }
        return Effect.as(Queue.offerAll(inflating, chunks), chunks)
      }),
      Stream.onEnd(Queue.end(inflating)),
      afterVerdict
    )
    const stored = yield* store.put(accepted)
    const inspected = yield* Fiber.join(inspection)
    const storedTar = yield* Fiber.join(tar)
    if (Option.isNone(yield* store.index(stored.digest))) {
      yield* store.putIndex(stored.digest, { tar: storedTar.digest, files: inspected.files })
    }
    return {
      digest: stored.digest,
      bytes: stored.bytes,
      files: inspected.files.length,
      uncompressedBytes: inspected.uncompressedBytes,
      manifest: inspected.manifest,
      created: [stored, storedTar].filter((artifact) => artifact.created).map((artifact) => artifact.digest)
    }
  }, Effect.scoped)

  const discard = (bundle: Deployments.ReadBundle) => store.discard(bundle.created)

  return Deployments.BundleReader.of({ limits, read, discard })
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
