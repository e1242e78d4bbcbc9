import { createHash, randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { NodeStream } from "@effect/platform-node"
import { Deployments } from "@hostplane/core"
import { Cache, Config, Duration, Effect, Exit, Layer, Option, Schema, Stream } from "effect"
import { inDataDir } from "../DataDir.ts"

/** Any failure of the disk is a defect: the store has no expected error. */
const io = <A>(run: () => Promise<A>) => Effect.promise(run)

const exists = (file: string) =>
  io(() =>
    Fs.access(file).then(
      () => true,
      () => false
    )
  )

const removeQuietly = (file: string) => io(() => Fs.rm(file, { force: true }))

/** What the writer below needs of an open file (tests hand it one whose flush fails). */
export type WritableFile = Pick<Fs.FileHandle, "write" | "writev" | "datasync">

const writeAll = async (file: WritableFile, chunk: Uint8Array): Promise<void> => {
  let offset = 0
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.byteLength - offset)
    offset += bytesWritten
  }
}

const sumBytes = (chunks: ReadonlyArray<Uint8Array>) => chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0)

const writevAll = async (file: WritableFile, chunks: ReadonlyArray<Uint8Array>): Promise<void> => {
  let skip = (await file.writev(chunks)).bytesWritten
  if (skip === sumBytes(chunks)) return
  // A short write: the rest chunk by chunk (a full disk then fails on the next call).
  for (const chunk of chunks) {
    if (skip < chunk.byteLength) await writeAll(file, chunk.subarray(skip))
    skip = Math.max(0, skip - chunk.byteLength)
  }
}

/** Bytes gathered per `writev`: each write is a thread-pool round trip, and 100 MiB in 64 KiB chunks would be 1,600. */
const batchBytes = 1024 * 1024

/**
 * Bytes written between two early flushes. The commit needs the whole file on the disk, and the kernel starts writing
 * dirty pages back only after seconds or gigabytes: without early flushes every byte of a 100 MiB upload (and of its
 * inflated tar) waited in memory for the final `fsync`, which then wrote them all while the client waited for its
 * answer (about 0.1 s per 230 MiB here). Flushed as the upload goes, the disk works while the body still arrives and
 * the final `fsync` finds at most this much (plus the last flush's bytes) left to write.
 */
const flushEveryBytes = 8 * 1024 * 1024

/**
 * Appends chunks to `file` with one `writev` per `batchBytes`, gathering the next batch while the previous one is
 * written: one write in flight, at most two batches held. Every `flushEveryBytes` written it also starts a `datasync`
 * beside the writes (one at a time, never waited for by them). `end` writes the rest and waits for every write and
 * for that flush.
 */
export const batchedWriter = (file: WritableFile) => {
  let batch: Array<Uint8Array> = []
  let gathered = 0
  let writing: Promise<void> = Promise.resolve()
  let unflushed = 0
  let flushing: Promise<void> | undefined
  /**
   * An early flush's failure, kept for `end`: Linux reports a write-back error to each open file once, so a failure
   * seen here would not be seen again by the final `fsync`, and the commit must not go ahead as if it had succeeded.
   */
  let flushFailure: { readonly error: unknown } | undefined
  const written = (bytes: number) => {
    unflushed += bytes
    if (unflushed < flushEveryBytes || flushing !== undefined) return
    unflushed = 0
    flushing = file.datasync().then(
      () => void (flushing = undefined),
      (error: unknown) => {
        flushFailure ??= { error }
        flushing = undefined
      }
    )
  }
  /** Starts writing the batch after the write in flight; answers that previous write, to wait for. */
  const flush = () => {
    const chunks = batch
    const bytes = gathered
    const previous = writing
    batch = []
    gathered = 0
    writing = previous.then(() => writevAll(file, chunks)).then(() => written(bytes))
    // Handled here so that a failure waiting for the next `flush` or `end` is no unhandled rejection.
    writing.catch(() => undefined)
    return previous
  }
  return {
    /** Appends a batch of chunks (one fiber step for all of them); waits only when a full batch goes to the disk. */
    add: (chunks: ReadonlyArray<Uint8Array>): Effect.Effect<void> => {
      for (const chunk of chunks) {
        batch.push(chunk)
        gathered += chunk.byteLength
      }
      return gathered < batchBytes ? Effect.void : io(flush)
    },
    end: io(async () => {
      flush()
      await writing
      await flushing
      if (flushFailure !== undefined) throw flushFailure.error
    }),
    /** Every write and flush started has ended (a failed one too): the file may be closed. */
    settled: () => writing.catch(() => undefined).then(() => flushing)
  }
}

const isDigest = Schema.is(Deployments.Digest)

const IndexFile = Schema.fromJsonString(Deployments.BundleIndex)
const decodeIndex = Schema.decodeUnknownEffect(IndexFile)
const encodeIndex = Schema.encodeEffect(IndexFile)

/** Indexes kept parsed in memory for `file`; each holds at most `BundleLimits.entries` paths. */
const indexCacheCapacity = 32

/** The suffix of a temporary object: only a live `put` or `putIndex` of this process owns one. */
const partSuffix = ".part"

/**
 * The store under `dir`: blobs at `sha256/<2 hex>/<64 hex>`, bundle indexes at `index/<2 hex>/<64 hex>.json`,
 * temporary objects in `tmp/` (the same file system, so the commit is one atomic rename of a flushed file). The folder
 * belongs to one process: at start it removes the `tmp/*.part` files a killed process left behind (replicas share
 * artifacts through object storage, never one folder).
 */
export const make = Effect.fn("ArtifactStoreDisk.make")(function* (dir: string) {
  const root = Path.resolve(dir)
  const tmp = Path.join(root, "tmp")
  yield* io(() => Fs.mkdir(tmp, { recursive: true, mode: 0o700 }))
  const leftovers = (yield* io(() => Fs.readdir(tmp))).filter((name) => name.endsWith(partSuffix))
  yield* Effect.forEach(leftovers, (name) => removeQuietly(Path.join(tmp, name)), { concurrency: 8, discard: true })

  const hexOf = (digest: Deployments.Digest) => digest.slice("sha256:".length)
  const blobPath = (digest: Deployments.Digest) => {
    const hex = hexOf(digest)
    return Path.join(root, "sha256", hex.slice(0, 2), hex)
  }
  const indexPath = (digest: Deployments.Digest) => {
    const hex = hexOf(digest)
    return Path.join(root, "index", hex.slice(0, 2), `${hex}.json`)
  }
  const tempPath = () => Path.join(tmp, `${randomUUID()}${partSuffix}`)

  const folders = new Set<string>()
  const ensureFolder = (folder: string) =>
    folders.has(folder)
      ? Effect.void
      : io(() => Fs.mkdir(folder, { recursive: true, mode: 0o700 })).pipe(
          Effect.andThen(Effect.sync(() => void folders.add(folder)))
        )

  /** Moves a flushed temporary file to `target` unless the same content is already there; true when it moved. */
  const commit = (temp: string, target: string) =>
    Effect.uninterruptible(
      Effect.gen(function* () {
        if (yield* exists(target)) return false
        yield* ensureFolder(Path.dirname(target))
        yield* io(() => Fs.rename(temp, target))
        return true
      })
    )

  const put = Effect.fn("ArtifactStoreDisk.put")(function* <E>(bytes: Stream.Stream<Uint8Array, E>) {
    const temp = tempPath()
    let moved = false
    yield* Effect.addFinalizer(() => (moved ? Effect.void : removeQuietly(temp)))
    const file = yield* Effect.acquireRelease(
      io(() => Fs.open(temp, "wx", 0o600)),
      (file) => io(() => file.close())
    )
    const hash = createHash("sha256")
    const writer = batchedWriter(file)
    yield* Effect.addFinalizer(() => io(() => writer.settled()))
    let size = 0
    yield* Stream.runForEachArray(bytes, (chunks) => {
      for (const chunk of chunks) {
        hash.update(chunk)
        size += chunk.byteLength
      }
      return writer.add(chunks)
    })
    yield* writer.end
    yield* io(() => file.sync())
    const digest = `sha256:${hash.digest("hex")}`
    moved = yield* commit(temp, blobPath(digest))
    return { digest, bytes: size, created: moved }
  }, Effect.scoped)

  const has = Effect.fn("ArtifactStoreDisk.has")(function* (digest: Deployments.Digest) {
    return isDigest(digest) && (yield* exists(blobPath(digest)))
  })

  const open = (digest: Deployments.Digest, range?: Deployments.ByteRange): Stream.Stream<Uint8Array> => {
    if (!isDigest(digest)) return Stream.die(new Error(`not an artifact digest: ${JSON.stringify(digest)}`))
    if (range !== undefined && range.length <= 0) return Stream.empty
    const bounds = range === undefined ? {} : { start: range.offset, end: range.offset + range.length - 1 }
    return NodeStream.fromReadable({ evaluate: () => createReadStream(blobPath(digest), bounds) }).pipe(Stream.orDie)
  }

  interface LoadedIndex {
    readonly index: Deployments.BundleIndex
    readonly byPath: ReadonlyMap<string, Deployments.BundleFile>
  }

  const loadedIndex = (index: Deployments.BundleIndex): LoadedIndex => ({
    index,
    byPath: new Map(index.files.map((entry) => [entry.path, entry]))
  })

  const loadIndex = (bundle: Deployments.Digest) =>
    Effect.gen(function* () {
      const file = indexPath(bundle)
      if (!isDigest(bundle) || !(yield* exists(file))) return Option.none<LoadedIndex>()
      const text = yield* io(() => Fs.readFile(file, "utf8"))
      const index = yield* Effect.orDie(decodeIndex(text))
      return Option.some(loadedIndex(index))
    })

  const indexes = yield* Cache.makeWith(loadIndex, {
    capacity: indexCacheCapacity,
    timeToLive: (exit) => (Exit.isSuccess(exit) && Option.isSome(exit.value) ? Duration.infinity : Duration.zero)
  })

  const putIndex = Effect.fn("ArtifactStoreDisk.putIndex")(function* (
    bundle: Deployments.Digest,
    index: Deployments.BundleIndex
  ) {
    if (!isDigest(bundle)) return yield* Effect.die(new Error(`not an artifact digest: ${JSON.stringify(bundle)}`))
    const target = indexPath(bundle)
    if (yield* exists(target)) return
    const text = yield* Effect.orDie(encodeIndex(index))
    const temp = tempPath()
    const moved = yield* io(() => Fs.writeFile(temp, text, { flag: "wx", mode: 0o600, flush: true })).pipe(
      Effect.andThen(commit(temp, target)),
      Effect.onExit((exit) => (Exit.isSuccess(exit) && exit.value ? Effect.void : removeQuietly(temp)))
    )
    // Kept as written: the deploy reads it back at once (the worker check, then the edge), and reading and decoding
    // a file of thousands of entries again is time the upload's answer would wait for. When another put's index got
    // there first, that one is read back instead.
    yield* moved ? Cache.set(indexes, bundle, Option.some(loadedIndex(index))) : Cache.invalidate(indexes, bundle)
  })

  const index = Effect.fn("ArtifactStoreDisk.index")(function* (bundle: Deployments.Digest) {
    return Option.map(yield* Cache.get(indexes, bundle), (loaded) => loaded.index)
  })

  const file = Effect.fn("ArtifactStoreDisk.file")(function* (bundle: Deployments.Digest, path: string) {
    return Option.flatMap(yield* Cache.get(indexes, bundle), (loaded) =>
      Option.map(Option.fromUndefinedOr(loaded.byPath.get(path)), (entry): Deployments.StoredFile => ({
        path: entry.path,
        bytes: entry.bytes,
        content: open(loaded.index.tar, { offset: entry.offset, length: entry.bytes })
      }))
    )
  })

  const discard = Effect.fn("ArtifactStoreDisk.discard")(function* (digests: ReadonlyArray<Deployments.Digest>) {
    for (const digest of digests.filter(isDigest)) {
      yield* Cache.invalidate(indexes, digest)
      yield* removeQuietly(indexPath(digest))
      yield* removeQuietly(blobPath(digest))
    }
  })

  return Deployments.ArtifactStore.of({ put, has, open, putIndex, index, file, discard })
})

/** `make` as a layer, for a host that picks the folder itself. */
export const layer = (dir: string): Layer.Layer<Deployments.ArtifactStore> =>
  Layer.effect(Deployments.ArtifactStore, make(dir))

/** The artifact folder of decisions.md part 5: `<SERVICE_DATA_DIR or .hostplane>/artifacts`. */
export const dirConfig: Config.Config<string> = inDataDir("artifacts")

/** The artifact folder read from `SERVICE_DATA_DIR`. */
export const layerConfig: Layer.Layer<Deployments.ArtifactStore, Config.ConfigError> = Layer.unwrap(
  Effect.map(dirConfig, layer)
)

/** A store in a fresh temporary folder, removed with everything in it when the layer is released: tests, examples. */
export const layerTemp: Layer.Layer<Deployments.ArtifactStore> = Layer.effect(
  Deployments.ArtifactStore,
  Effect.acquireRelease(
    io(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-artifacts-"))),
    (dir) => io(() => Fs.rm(dir, { recursive: true, force: true }))
  ).pipe(Effect.flatMap(make))
)
