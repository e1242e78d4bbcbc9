import { randomUUID } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { NodeStream } from "@effect/platform-node"
import { Deployments, Errors } from "@hostplane/core"
import { Cache, Clock, Duration, Effect, Exit, Layer, Option, Schema, Stream } from "effect"
import * as S3Bucket from "../s3/S3Bucket.ts"

/** The local copies of artifacts the edge reads: a folder and the most it may hold. */
export interface CacheOptions {
  readonly dir: string
  readonly maxBytes: number
}

const isDigest = Schema.is(Deployments.Digest)
const IndexFile = Schema.fromJsonString(Deployments.BundleIndex)
const decodeIndex = Schema.decodeUnknownEffect(IndexFile)
const encodeIndex = Schema.encodeEffect(IndexFile)

/** Indexes kept parsed in memory for `file`, as the local folder does. */
const indexCacheCapacity = 32

/** Temporary uploads older than this are a killed process's leftovers (an upload of 100 MiB takes seconds). */
const leftoverAge = Duration.hours(24)

const hexOf = (digest: Deployments.Digest) => digest.slice("sha256:".length)
const blobKey = (hex: string) => `artifacts/sha256/${hex}`
const indexKey = (hex: string) => `artifacts/index/${hex}.json`

const unavailable = (failure: S3Bucket.S3Failure) => new Errors.ArtifactStoreUnavailable({ message: failure.message })

const codeOf = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined

/**
 * The artifact store in an S3 bucket under `artifacts/` (decisions.md part 15): blobs at `sha256/<hex>`, indexes at
 * `index/<hex>.json`. A put streams to `tmp/<uuid>` (multipart above 8 MiB) while it is hashed, then the bucket copies
 * it to its digest and the temporary object is deleted; a put whose stream fails aborts its upload, so nothing of a
 * refused bundle stays. Indexes are written once (`If-None-Match: *`). The edge reads files through a local cache of
 * whole blobs keyed by digest, bounded by `maxBytes` (least recently used first out): a blob not cached yet is served
 * by ranged GETs while one background download fills the cache.
 */
export const make = Effect.fn("ArtifactStoreS3.make")(function* (bucket: S3Bucket.S3Bucket, cache: CacheOptions) {
  const scope = yield* Effect.scope
  const cacheDir = Path.resolve(cache.dir)
  const cacheTmp = Path.join(cacheDir, "tmp")
  yield* Effect.promise(() => Fs.rm(cacheTmp, { recursive: true, force: true }))
  yield* Effect.promise(() => Fs.mkdir(cacheTmp, { recursive: true, mode: 0o700 }))

  /** Cached blobs by hex, least recently used first, with their sizes. */
  const cached = new Map<string, number>()
  let cachedBytes = 0
  const filling = new Set<string>()
  /** Blobs discarded since their last put: a background fill that ends after the discard does not cache them again. */
  const discarded = new Set<string>()
  const cachePath = (hex: string) => Path.join(cacheDir, hex)

  const evict = Effect.promise(async () => {
    while (cachedBytes > cache.maxBytes) {
      const oldest = cached.keys().next()
      if (oldest.done === true) return
      cachedBytes -= cached.get(oldest.value)!
      cached.delete(oldest.value)
      // A reader that opened the file before keeps reading it; a later one goes to the bucket.
      await Fs.rm(cachePath(oldest.value), { force: true })
    }
  })

  const remember = (hex: string, bytes: number) =>
    Effect.suspend(() => {
      cached.set(hex, bytes)
      cachedBytes += bytes
      return evict
    })

  // What an earlier run left in the cache is still right: a blob never changes, and a file is there only whole.
  const previous = yield* Effect.promise(async () => {
    const names = (await Fs.readdir(cacheDir)).filter((name) => /^[0-9a-f]{64}$/.test(name))
    const stats = await Promise.all(names.map(async (name) => ({ name, stat: await Fs.stat(cachePath(name)) })))
    return stats.sort((a, b) => a.stat.atimeMs - b.stat.atimeMs)
  })
  for (const { name, stat } of previous) yield* remember(name, stat.size)

  /** Downloads a blob into the cache in the background, once at a time per blob; a failure only logs. */
  const fill = (hex: string) =>
    Effect.suspend(() => {
      if (cached.has(hex) || filling.has(hex)) return Effect.void
      filling.add(hex)
      const temp = Path.join(cacheTmp, `${randomUUID()}.part`)
      return bucket.download(blobKey(hex), temp).pipe(
        Effect.andThen(Effect.promise(() => Fs.stat(temp))),
        Effect.flatMap((stat) =>
          stat.size > cache.maxBytes || discarded.has(hex)
            ? Effect.void
            : Effect.promise(() => Fs.rename(temp, cachePath(hex))).pipe(
                Effect.andThen(
                  Effect.suspend(() =>
                    discarded.has(hex)
                      ? Effect.promise(() => Fs.rm(cachePath(hex), { force: true }))
                      : remember(hex, stat.size)
                  )
                )
              )
        ),
        Effect.catchTag("S3Failure", (failure) => Effect.logWarning("artifact cache fill failed", failure.message)),
        Effect.ensuring(
          Effect.promise(() => Fs.rm(temp, { force: true })).pipe(
            Effect.andThen(Effect.sync(() => filling.delete(hex)))
          )
        ),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    })

  const remote = (hex: string, range?: Deployments.ByteRange) =>
    bucket
      .get(blobKey(hex), range)
      .pipe(
        Stream.mapError((failure) =>
          failure.reason === "NotFound"
            ? new Errors.ArtifactStoreUnavailable({ message: `the artifact sha256:${hex} is gone from the bucket` })
            : unavailable(failure)
        )
      )

  /** The blob's bytes: the cached file when there is one (opened when the stream starts), else the bucket. */
  const read = (
    hex: string,
    range?: Deployments.ByteRange
  ): Stream.Stream<Uint8Array, Errors.ArtifactStoreUnavailable> =>
    Stream.unwrap(
      Effect.promise(async () => {
        if (!cached.has(hex)) return undefined
        // Used again: last out.
        const bytes = cached.get(hex)!
        cached.delete(hex)
        cached.set(hex, bytes)
        return Fs.open(cachePath(hex)).catch((cause: unknown) => {
          if (codeOf(cause) === "ENOENT") return undefined
          throw cause
        })
      }).pipe(
        Effect.map((handle) =>
          handle === undefined
            ? remote(hex, range)
            : NodeStream.fromReadable({
                evaluate: () =>
                  handle.createReadStream(
                    range === undefined ? {} : { start: range.offset, end: range.offset + range.length - 1 }
                  ),
                onError: (cause) =>
                  new Errors.ArtifactStoreUnavailable({ message: `cached artifact: ${String(cause)}` })
              })
        )
      )
    )

  const put = Effect.fn("ArtifactStoreS3.put")(function* <E>(bytes: Stream.Stream<Uint8Array, E>) {
    const temp = `artifacts/tmp/${randomUUID()}`
    const written = yield* bucket
      .upload(temp, bytes)
      .pipe(Effect.catchIf(S3Bucket.isS3Failure, (failure) => Effect.fail(unavailable(failure))))
    const digest: Deployments.Digest = `sha256:${written.sha256}`
    const created = yield* Effect.gen(function* () {
      // The same bytes twice are stored once: a blob already there is the same content.
      if (Option.isSome(yield* bucket.head(blobKey(written.sha256)))) return false
      yield* bucket.copy(temp, blobKey(written.sha256))
      return true
    }).pipe(
      Effect.mapError(unavailable),
      // A leftover temporary object is swept at the next start; it is never listed as an artifact.
      Effect.ensuring(Effect.ignore(bucket.remove(temp)))
    )
    if (created) discarded.delete(written.sha256)
    return { digest, bytes: written.bytes, created }
  })

  const has = Effect.fn("ArtifactStoreS3.has")(function* (digest: Deployments.Digest) {
    if (!isDigest(digest)) return false
    if (cached.has(hexOf(digest))) return true
    return Option.isSome(yield* Effect.mapError(bucket.head(blobKey(hexOf(digest))), unavailable))
  })

  const open = (
    digest: Deployments.Digest,
    range?: Deployments.ByteRange
  ): Stream.Stream<Uint8Array, Errors.ArtifactStoreUnavailable> => {
    if (!isDigest(digest)) return Stream.die(new Error(`not an artifact digest: ${JSON.stringify(digest)}`))
    if (range !== undefined && range.length <= 0) return Stream.empty
    return read(hexOf(digest), range)
  }

  interface LoadedIndex {
    readonly index: Deployments.BundleIndex
    readonly byPath: ReadonlyMap<string, Deployments.BundleFile>
  }

  const loadIndex = (bundle: Deployments.Digest) =>
    Effect.gen(function* () {
      if (!isDigest(bundle)) return Option.none<LoadedIndex>()
      const text = yield* Stream.mkString(Stream.decodeText(bucket.get(indexKey(hexOf(bundle))))).pipe(
        Effect.map(Option.some),
        Effect.catchIf(
          (failure) => failure.reason === "NotFound",
          () => Effect.succeedNone
        ),
        Effect.mapError(unavailable)
      )
      if (Option.isNone(text)) return Option.none<LoadedIndex>()
      const index = yield* Effect.orDie(decodeIndex(text.value))
      return Option.some<LoadedIndex>({ index, byPath: new Map(index.files.map((entry) => [entry.path, entry])) })
    })

  const indexes = yield* Cache.makeWith(loadIndex, {
    capacity: indexCacheCapacity,
    timeToLive: (exit) => (Exit.isSuccess(exit) && Option.isSome(exit.value) ? Duration.infinity : Duration.zero)
  })

  const putIndex = Effect.fn("ArtifactStoreS3.putIndex")(function* (
    bundle: Deployments.Digest,
    index: Deployments.BundleIndex
  ) {
    if (!isDigest(bundle)) return yield* Effect.die(new Error(`not an artifact digest: ${JSON.stringify(bundle)}`))
    const key = indexKey(hexOf(bundle))
    if (Option.isSome(yield* Effect.mapError(bucket.head(key), unavailable))) return
    const text = yield* Effect.orDie(encodeIndex(index))
    // Conditional: of two replicas indexing the same bundle at once, the first index stays.
    yield* Effect.mapError(bucket.putSmall(key, text, { ifAbsent: true }), unavailable)
    yield* Cache.invalidate(indexes, bundle)
  })

  const index = Effect.fn("ArtifactStoreS3.index")(function* (bundle: Deployments.Digest) {
    return Option.map(yield* Cache.get(indexes, bundle), (loaded) => loaded.index)
  })

  const file = Effect.fn("ArtifactStoreS3.file")(function* (bundle: Deployments.Digest, path: string) {
    const loaded = yield* Cache.get(indexes, bundle)
    if (Option.isNone(loaded)) return Option.none()
    const entry = loaded.value.byPath.get(path)
    if (entry === undefined) return Option.none()
    const tar = hexOf(loaded.value.index.tar)
    if (!cached.has(tar)) {
      // Checked before answering, so a lost blob is a 503, not a response that breaks off.
      const stored = yield* Effect.mapError(bucket.head(blobKey(tar)), unavailable)
      if (Option.isNone(stored)) {
        return yield* new Errors.ArtifactStoreUnavailable({
          message: `the artifact ${loaded.value.index.tar} of bundle ${bundle} is gone from the bucket`
        })
      }
      yield* fill(tar)
    }
    return Option.some<Deployments.StoredFile>({
      path: entry.path,
      bytes: entry.bytes,
      content: open(loaded.value.index.tar, { offset: entry.offset, length: entry.bytes })
    })
  })

  // Temporary uploads a killed process left: swept in the background, so a bucket that is down delays no start.
  const startedAt = yield* Clock.currentTimeMillis
  yield* bucket.list("artifacts/tmp/").pipe(
    Stream.filter(
      (object) =>
        object.lastModified !== undefined && startedAt - object.lastModified.getTime() > Duration.toMillis(leftoverAge)
    ),
    Stream.runCollect,
    Effect.flatMap((old) => bucket.removeMany(Array.from(old, (object) => object.key))),
    Effect.catchTag("S3Failure", (failure) => Effect.logWarning("artifact leftovers not swept", failure.message)),
    Effect.forkIn(scope)
  )

  const discard = Effect.fn("ArtifactStoreS3.discard")(function* (digests: ReadonlyArray<Deployments.Digest>) {
    for (const digest of digests.filter(isDigest)) {
      const hex = hexOf(digest)
      discarded.add(hex)
      yield* Cache.invalidate(indexes, digest)
      yield* Effect.mapError(bucket.removeMany([indexKey(hex), blobKey(hex)]), unavailable)
      if (cached.has(hex)) {
        cachedBytes -= cached.get(hex)!
        cached.delete(hex)
        yield* Effect.promise(() => Fs.rm(cachePath(hex), { force: true }))
      }
    }
  })

  return Deployments.ArtifactStore.of({ put, has, open, putIndex, index, file, discard })
})

export const layer = (bucket: S3Bucket.S3Bucket, cache: CacheOptions): Layer.Layer<Deployments.ArtifactStore> =>
  Layer.effect(Deployments.ArtifactStore, make(bucket, cache))
