import { Context, Effect, Layer, Schema, Stream } from "effect"
import { portOff } from "../kernel/Port.ts"

/** What a stored image is: its size and the hex SHA-256 of its bytes. */
export interface StoredDigest {
  readonly bytes: number
  readonly sha256: string
}

/** The backup store failed to keep or read an image. */
export class BackupStoreError extends Schema.TaggedError<BackupStoreError>()("BackupStoreError", {
  message: Schema.String
}) {}

/**
 * Where generations and exports are kept, by key (the generation's `offsiteKey`). Images stream in and out, never
 * buffered whole; a local folder by default, an S3-compatible bucket behind the same port.
 */
export class BackupStore extends Context.Service<
  BackupStore,
  {
    /** Stores the stream under `key` (replacing a partial earlier attempt) and answers its size and digest. */
    readonly put: <E>(
      key: string,
      image: Stream.Stream<Uint8Array, E>
    ) => Effect.Effect<StoredDigest, E | BackupStoreError>
    /** The stored bytes of `key`. */
    readonly read: (key: string) => Stream.Stream<Uint8Array, BackupStoreError>
    /** Reads `key` again in full and answers its digest now; undefined when the key is gone. */
    readonly digest: (key: string) => Effect.Effect<StoredDigest | undefined, BackupStoreError>
    /** Removes `key`; nothing when it is absent. */
    readonly remove: (key: string) => Effect.Effect<void, BackupStoreError>
  }
>()("@hostplane/core/database/BackupStore") {
  /** No backup store: with the node admin it is the database add-on's pair, so the add-on answers 503 `no_node_admin`. */
  static readonly off: Layer.Layer<BackupStore> = Layer.sync(BackupStore, () => {
    const refused = new BackupStoreError({ message: "no backup store" })
    return portOff({
      put: () => Effect.fail(refused),
      read: () => Stream.fail(refused),
      digest: () => Effect.fail(refused),
      remove: () => Effect.fail(refused)
    })
  })
}
