import { Storage } from "@hostplane/core"
import { Effect, Layer, Option, Stream } from "effect"
import * as S3Bucket from "../s3/S3Bucket.ts"

/** Where the storage add-on's objects sit in the bucket (decisions.md part 15). */
const folder = "storage/"

const storeError = (failure: S3Bucket.S3Failure) =>
  new Storage.ObjectStoreError({
    reason:
      failure.reason === "NotFound" ? "NotFound" : failure.name === "KeyTooLongError" ? "InvalidKey" : "Unavailable",
    message: failure.message
  })

const invalid = (problem: string | undefined) =>
  problem === undefined
    ? Effect.void
    : Effect.fail(new Storage.ObjectStoreError({ reason: "InvalidKey", message: problem }))

/** S3's time of a write: a HEAD says it to the second (an HTTP date), so a listing's is cut to the second too. */
const uploadedOf = (at: Date | undefined) =>
  new Date(Math.floor((at ?? new Date()).getTime() / 1000) * 1000).toISOString()

/**
 * The object store in an S3 bucket, under `storage/`: a put is one streamed upload straight to its key (multipart
 * above 8 MiB, aborted when the body fails), so the key holds the whole new object or what it held before; a listing
 * is the bucket's, sizes included, so the node's usage report sums what is really stored. S3 caps a whole key at 1,024
 * bytes: with `storage/` and `SERVICE_S3_PREFIX` in front, the longest keys are refused as `InvalidKey`.
 */
export const make = (bucket: S3Bucket.S3Bucket): Storage.ObjectStore["Service"] => {
  const put = Effect.fn("ObjectStoreS3.put")(function* <E>(key: string, body: Stream.Stream<Uint8Array, E>) {
    yield* invalid(Storage.keyProblem(key))
    const written = yield* bucket
      .upload(`${folder}${key}`, body)
      .pipe(Effect.catchIf(S3Bucket.isS3Failure, (failure) => Effect.fail(storeError(failure))))
    // The bucket's own ETag and time, as a later head or listing answers them.
    const stored = yield* head(key)
    return Option.getOrElse(stored, () => ({ key, bytes: written.bytes, etag: "", uploaded: new Date().toISOString() }))
  })

  const head = Effect.fn("ObjectStoreS3.head")(function* (key: string) {
    yield* invalid(Storage.keyProblem(key))
    const held = yield* Effect.mapError(bucket.head(`${folder}${key}`), storeError)
    return Option.map(held, (object) => ({
      key,
      bytes: object.bytes,
      etag: object.etag,
      uploaded: uploadedOf(object.lastModified)
    }))
  })

  const get = (key: string): Stream.Stream<Uint8Array, Storage.ObjectStoreError> =>
    Stream.unwrap(
      Effect.as(invalid(Storage.keyProblem(key)), bucket.get(`${folder}${key}`).pipe(Stream.mapError(storeError)))
    )

  const list = (prefix: string): Stream.Stream<Storage.ObjectInfo, Storage.ObjectStoreError> =>
    Stream.unwrap(
      Effect.as(
        invalid(Storage.prefixProblem(prefix)),
        bucket.list(`${folder}${prefix}`).pipe(
          Stream.map((object) => ({
            key: object.key.slice(folder.length),
            bytes: object.bytes,
            etag: object.etag,
            uploaded: uploadedOf(object.lastModified)
          })),
          Stream.mapError(storeError)
        )
      )
    )

  const remove = Effect.fn("ObjectStoreS3.remove")(function* (key: string) {
    yield* invalid(Storage.keyProblem(key))
    // A DELETE answers the same whether the key held something: the HEAD tells.
    const held = yield* Effect.mapError(bucket.head(`${folder}${key}`), storeError)
    if (Option.isNone(held)) return false
    yield* Effect.mapError(bucket.remove(`${folder}${key}`), storeError)
    return true
  })

  const removePrefix = Effect.fn("ObjectStoreS3.removePrefix")(function* (prefix: string) {
    yield* invalid(prefix === "" ? "removing every object takes a prefix" : Storage.prefixProblem(prefix))
    const keys = Array.from(yield* Stream.runCollect(list(prefix)), (object) => `${folder}${object.key}`)
    yield* Effect.mapError(bucket.removeMany(keys), storeError)
    return keys.length
  })

  return Storage.ObjectStore.of({ put, head, get, list, remove, removePrefix })
}

export const layer = (bucket: S3Bucket.S3Bucket): Layer.Layer<Storage.ObjectStore> =>
  Layer.succeed(Storage.ObjectStore, make(bucket))
