import { Storage } from "@hostplane/core"
import { Effect, Layer, Option, Stream } from "effect"
import { createHash } from "node:crypto"

const invalid = (message: string) => new Storage.ObjectStoreError({ reason: "InvalidKey", message })

const checkKey = (key: string) => {
  const problem = Storage.keyProblem(key)
  return problem === undefined ? Effect.void : Effect.fail(invalid(problem))
}

const checkPrefix = (prefix: string) => {
  const problem = Storage.prefixProblem(prefix)
  return problem === undefined ? Effect.void : Effect.fail(invalid(problem))
}

/** Objects in memory, for tests and examples; the same key and prefix rules as every adapter. */
export const make = Effect.sync(() => {
  const objects = new Map<string, Uint8Array>()
  const meta = new Map<string, { readonly etag: string; readonly uploaded: string }>()
  const matching = (prefix: string) => [...objects.keys()].filter((key) => key.startsWith(prefix))
  const infoOf = (key: string): Storage.ObjectInfo => ({
    key,
    bytes: objects.get(key)!.byteLength,
    ...meta.get(key)!
  })
  const store = Storage.ObjectStore.of({
    put: (key, body) =>
      Effect.andThen(
        checkKey(key),
        Effect.map(Stream.mkUint8Array(body), (bytes) => {
          objects.set(key, bytes)
          meta.set(key, {
            etag: createHash("md5").update(bytes).digest("hex"),
            uploaded: new Date().toISOString()
          })
          return infoOf(key)
        })
      ),
    head: (key) =>
      Effect.andThen(
        checkKey(key),
        Effect.sync(() => (objects.has(key) ? Option.some(infoOf(key)) : Option.none()))
      ),
    get: (key) =>
      Stream.unwrap(
        Effect.andThen(
          checkKey(key),
          Effect.suspend(() => {
            const bytes = objects.get(key)
            return bytes === undefined
              ? Effect.fail(new Storage.ObjectStoreError({ reason: "NotFound", message: `no object ${key}` }))
              : Effect.succeed(Stream.make(bytes))
          })
        )
      ),
    list: (prefix) =>
      Stream.unwrap(
        Effect.andThen(
          checkPrefix(prefix),
          Effect.sync(() => Stream.fromIterable(matching(prefix).map(infoOf)))
        )
      ),
    remove: (key) =>
      Effect.andThen(
        checkKey(key),
        Effect.sync(() => meta.delete(key) && objects.delete(key))
      ),
    removePrefix: (prefix) =>
      Effect.andThen(
        prefix === "" ? Effect.fail(invalid("removing every object takes a prefix")) : checkPrefix(prefix),
        Effect.sync(() => matching(prefix).filter((key) => meta.delete(key) && objects.delete(key)).length)
      )
  })
  return { store, objects }
})

export const layer: Layer.Layer<Storage.ObjectStore> = Layer.effect(
  Storage.ObjectStore,
  Effect.map(make, ({ store }) => store)
)
