import type { Database, Deployments, Storage } from "@hostplane/core"
import { Config, Effect, Layer, Option } from "effect"
import * as ArtifactStoreDisk from "../deployments/ArtifactStoreDisk.ts"
import * as ArtifactStoreS3 from "../deployments/ArtifactStoreS3.ts"
import * as BackupStoreDisk from "../database/BackupStoreDisk.ts"
import * as BackupStoreS3 from "../database/BackupStoreS3.ts"
import { inDataDir } from "../DataDir.ts"
import * as ObjectStoreDisk from "../storage/ObjectStoreDisk.ts"
import * as ObjectStoreS3 from "../storage/ObjectStoreS3.ts"
import * as S3Bucket from "./S3Bucket.ts"

/** The artifact cache of an S3-backed server: `<data dir>/cache/artifacts`, `SERVICE_S3_CACHE_BYTES` (1 GiB). */
export const cacheConfig: Config.Config<ArtifactStoreS3.CacheOptions> = Config.all({
  dir: inDataDir("cache/artifacts"),
  maxBytes: Config.Int("SERVICE_S3_CACHE_BYTES").pipe(Config.withDefault(1024 * 1024 * 1024))
})

const bucketOrNone = Effect.map(
  S3Bucket.settingsConfig,
  Option.map((settings) => S3Bucket.make(settings))
)

/** The artifact store of decisions.md part 15: the bucket when `SERVICE_S3_URL` is set, else `<data dir>/artifacts`. */
export const artifactStore: Layer.Layer<Deployments.ArtifactStore, Config.ConfigError> = Layer.unwrap(
  Effect.gen(function* () {
    const bucket = yield* bucketOrNone
    if (Option.isNone(bucket)) return ArtifactStoreDisk.layerConfig
    return ArtifactStoreS3.layer(bucket.value, yield* cacheConfig)
  })
)

/** Generations and exports: the bucket when `SERVICE_S3_URL` is set, else `<data dir>/backups`. */
export const backupStore: Layer.Layer<Database.BackupStore, Config.ConfigError | Database.BackupStoreError> =
  Layer.unwrap(
    Effect.map(
      bucketOrNone,
      Option.match({ onNone: () => BackupStoreDisk.layerConfig, onSome: (bucket) => BackupStoreS3.layer(bucket) })
    )
  )

/** The storage add-on's objects: the bucket when `SERVICE_S3_URL` is set, else `<data dir>/storage`. */
export const objectStore: Layer.Layer<Storage.ObjectStore, Config.ConfigError | Storage.ObjectStoreError> =
  Layer.unwrap(
    Effect.map(
      bucketOrNone,
      Option.match({ onNone: () => ObjectStoreDisk.layerConfig, onSome: (bucket) => ObjectStoreS3.layer(bucket) })
    )
  )
