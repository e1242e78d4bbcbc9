import { Database } from "@hostplane/core"
import { Effect, Layer, Stream } from "effect"
import { createHash } from "node:crypto"

/** Images in memory, for tests; `corrupt` flips a byte of a stored image, as a failing disk would. */
export const make = Effect.sync(() => {
  const images = new Map<string, Uint8Array>()
  const digestOf = (bytes: Uint8Array): Database.StoredDigest => ({
    bytes: bytes.byteLength,
    sha256: createHash("sha256").update(bytes).digest("hex")
  })
  const store = Database.BackupStore.of({
    put: (key, image) =>
      Effect.map(Stream.runCollect(image), (chunks) => {
        const bytes = Buffer.concat(Array.from(chunks))
        images.set(key, bytes)
        return digestOf(bytes)
      }),
    read: (key) => {
      const bytes = images.get(key)
      return bytes === undefined
        ? Stream.fail(new Database.BackupStoreError({ message: `no image ${key}` }))
        : Stream.make(bytes)
    },
    digest: (key) =>
      Effect.sync(() => {
        const bytes = images.get(key)
        return bytes === undefined ? undefined : digestOf(bytes)
      }),
    remove: (key) => Effect.sync(() => void images.delete(key))
  })
  return { store, images }
})

export const layer: Layer.Layer<Database.BackupStore> = Layer.effect(
  Database.BackupStore,
  Effect.map(make, ({ store }) => store)
)
