import { createHash } from "node:crypto"
import { Database } from "@hostplane/core"
import { Effect, Layer, Option, Stream } from "effect"
import * as S3Bucket from "../s3/S3Bucket.ts"

/** A key is a relative path of safe segments, as in the local folder. */
const keyPattern = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/

const storeError = (failure: S3Bucket.S3Failure) => new Database.BackupStoreError({ message: failure.message })

/**
 * The backup store in an S3 bucket: generations under `backups/<key>`, exports (keys `exports/...`) under `exports/`
 * (decisions.md part 15). An image is one streamed upload hashed as it passes (multipart above 8 MiB, aborted when the
 * image fails), so a key holds a whole image or nothing.
 */
export const make = (bucket: S3Bucket.S3Bucket): Database.BackupStore["Service"] => {
  const objectKey = (key: string) =>
    keyPattern.test(key)
      ? Effect.succeed(key.startsWith("exports/") ? key : `backups/${key}`)
      : Effect.die(new Error(`bad backup key ${key}`))

  const put = Effect.fn("BackupStoreS3.put")(function* <E>(key: string, image: Stream.Stream<Uint8Array, E>) {
    const written = yield* bucket
      .upload(yield* objectKey(key), image)
      .pipe(Effect.catchIf(S3Bucket.isS3Failure, (failure) => Effect.fail(storeError(failure))))
    return { bytes: written.bytes, sha256: written.sha256 }
  })

  const read = (key: string): Stream.Stream<Uint8Array, Database.BackupStoreError> =>
    Stream.unwrap(Effect.map(objectKey(key), (object) => bucket.get(object).pipe(Stream.mapError(storeError))))

  const digest = Effect.fn("BackupStoreS3.digest")(function* (key: string) {
    const object = yield* objectKey(key)
    if (Option.isNone(yield* Effect.mapError(bucket.head(object), storeError))) return undefined
    const hash = createHash("sha256")
    let bytes = 0
    yield* Stream.runForEach(read(key), (chunk) =>
      Effect.sync(() => {
        hash.update(chunk)
        bytes += chunk.byteLength
      })
    )
    return { bytes, sha256: hash.digest("hex") }
  })

  const remove = Effect.fn("BackupStoreS3.remove")(function* (key: string) {
    yield* Effect.mapError(bucket.remove(yield* objectKey(key)), storeError)
  })

  return Database.BackupStore.of({ put, read, digest, remove })
}

export const layer = (bucket: S3Bucket.S3Bucket): Layer.Layer<Database.BackupStore> =>
  Layer.succeed(Database.BackupStore, make(bucket))
