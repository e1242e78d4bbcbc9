import { assert, layer } from "@effect/vitest"
import { Storage } from "@hostplane/core"
import { Effect, type Layer, Option, Schema, Stream } from "effect"
import { randomSuffix } from "../contract/Fixtures.ts"

class Broken extends Schema.TaggedError<Broken>()("Broken", {}) {}

const text = (value: string) => new TextEncoder().encode(value)

const body = (...parts: ReadonlyArray<string>) => Stream.fromIterable(parts.map(text))

const collect = (stream: Stream.Stream<Uint8Array, Storage.ObjectStoreError>) =>
  Effect.map(Stream.mkUint8Array(stream), (bytes) => new TextDecoder().decode(bytes))

/** Key and size: what most checks compare (the ETag and time are checked on their own). */
const sized = (info: Storage.ObjectInfo) => ({ key: info.key, bytes: info.bytes })

const listedInfos = (store: Storage.ObjectStore["Service"], prefix: string) =>
  Effect.map(Stream.runCollect(store.list(prefix)), (items) =>
    Array.from(items).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  )

const listed = (store: Storage.ObjectStore["Service"], prefix: string) =>
  Effect.map(listedInfos(store, prefix), (items) => items.map(sized))

const reasonOf = <A, R>(effect: Effect.Effect<A, Storage.ObjectStoreError, R>) =>
  Effect.map(Effect.flip(effect), (error) => error.reason)

/** The `ObjectStore` contract: every adapter (the local folder, memory, an S3 bucket) must pass it. */
export const objectStoreSuite = <E>(name: string, objects: Layer.Layer<Storage.ObjectStore, E>): void =>
  layer(objects)(`${name}: ObjectStore contract`, (it) => {
    it.effect("put streams the chunks in and answers the size; get streams them back; a put replaces", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const key = `${randomSuffix()}/notes/a.txt`
        assert.deepStrictEqual(sized(yield* store.put(key, body("hello ", "objects"))), { key, bytes: 13 })
        assert.strictEqual(yield* collect(store.get(key)), "hello objects")
        yield* store.put(key, body("second"))
        assert.strictEqual(yield* collect(store.get(key)), "second")
        assert.deepStrictEqual(yield* listed(store, key), [{ key, bytes: 6 }])
      })
    )

    it.effect("head, put and a listing agree on size, ETag and upload time; a new write changes the ETag", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const key = `${randomSuffix()}/meta.txt`
        const before = Date.now()
        assert.isTrue(Option.isNone(yield* store.head(key)))
        const first = yield* store.put(key, body("one"))
        assert.strictEqual(first.bytes, 3)
        assert.isTrue(first.etag.length > 0)
        const uploaded = Date.parse(first.uploaded)
        assert.isTrue(uploaded >= before - 2_000 && uploaded <= Date.now() + 2_000, first.uploaded)
        assert.strictEqual(new Date(uploaded).toISOString(), first.uploaded)
        assert.deepStrictEqual(yield* store.head(key), Option.some(first))
        assert.deepStrictEqual(yield* listedInfos(store, key), [first])
        const second = yield* store.put(key, body("two!"))
        assert.notStrictEqual(second.etag, first.etag)
        assert.deepStrictEqual(yield* store.head(key), Option.some(second))
        yield* store.remove(key)
        assert.isTrue(Option.isNone(yield* store.head(key)))
        assert.strictEqual(yield* reasonOf(store.head("a//b")), "InvalidKey")
      })
    )

    it.effect("a large object streams through whole", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const key = `${randomSuffix()}/big.bin`
        const chunk = new Uint8Array(64 * 1024).map((_, i) => i % 251)
        const chunks = 80
        const stored = yield* store.put(key, Stream.range(1, chunks).pipe(Stream.map(() => chunk)))
        assert.strictEqual(stored.bytes, chunks * chunk.byteLength)
        const read = yield* Stream.mkUint8Array(store.get(key))
        assert.strictEqual(read.byteLength, chunks * chunk.byteLength)
        assert.strictEqual(read[chunk.byteLength * 7 + 300], 300 % 251)
      })
    )

    it.effect("a put whose stream fails fails with its error and keeps what the key held", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const prefix = `${randomSuffix()}/`
        const key = `${prefix}kept`
        yield* store.put(key, body("old"))
        const failing = Stream.concat(body("partial new bytes"), Stream.fail(new Broken()))
        const error = yield* Effect.flip(store.put(key, failing))
        assert.strictEqual(error._tag, "Broken")
        assert.strictEqual(yield* collect(store.get(key)), "old")
        const fresh = yield* Effect.flip(store.put(`${prefix}never`, failing))
        assert.strictEqual(fresh._tag, "Broken")
        assert.deepStrictEqual(yield* listed(store, prefix), [{ key, bytes: 3 }])
      })
    )

    it.effect("get of a missing key is NotFound; remove answers whether the key held something", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const key = `${randomSuffix()}/gone`
        assert.strictEqual(yield* reasonOf(collect(store.get(key))), "NotFound")
        yield* store.put(key, body("x"))
        assert.isTrue(yield* store.remove(key))
        assert.isFalse(yield* store.remove(key))
        assert.strictEqual(yield* reasonOf(collect(store.get(key))), "NotFound")
      })
    )

    it.effect("list matches a plain string prefix, across segments; `a` and `a/b` are both objects", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const root = randomSuffix()
        for (const key of ["p/a", "p/b/c", "p-x", "p", "q/p"]) yield* store.put(`${root}/${key}`, body(key))
        const keys = (prefix: string) =>
          Effect.map(listed(store, `${root}/${prefix}`), (items) =>
            items.map((item) => item.key.slice(root.length + 1))
          )
        assert.deepStrictEqual(yield* keys("p/"), ["p/a", "p/b/c"])
        assert.deepStrictEqual(yield* keys("p"), ["p", "p-x", "p/a", "p/b/c"])
        assert.deepStrictEqual(yield* keys("p/b"), ["p/b/c"])
        assert.deepStrictEqual(yield* keys(""), ["p", "p-x", "p/a", "p/b/c", "q/p"])
        assert.deepStrictEqual(yield* keys("z"), [])
        assert.strictEqual(yield* collect(store.get(`${root}/p`)), "p")
        assert.strictEqual(yield* collect(store.get(`${root}/p/b/c`)), "p/b/c")
      })
    )

    it.effect("keys with spaces, non-ASCII, `%`, `~` and leading dots are kept and listed as given", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const prefix = `${randomSuffix()}/`
        const names = ["ü ñ.txt", ".hidden", "100%~", ".tmp", "a%2Fb", "日本/語"]
        for (const name of names) yield* store.put(`${prefix}${name}`, body(name))
        const items = yield* listed(store, prefix)
        assert.deepStrictEqual(items.map((item) => item.key).sort(), names.map((name) => `${prefix}${name}`).sort())
        for (const name of names) assert.strictEqual(yield* collect(store.get(`${prefix}${name}`)), name)
      })
    )

    it.effect(
      "removePrefix removes only the objects under the prefix and answers how many; an empty prefix is refused",
      () =>
        Effect.gen(function* () {
          const store = yield* Storage.ObjectStore
          const one = `prj_${randomSuffix()}/`
          const two = `prj_${randomSuffix()}/`
          for (const key of ["a", "b/c", "b/d/e"]) yield* store.put(`${one}${key}`, body(key))
          yield* store.put(`${two}a`, body("other project"))
          assert.strictEqual(yield* store.removePrefix(one), 3)
          assert.deepStrictEqual(yield* listed(store, one), [])
          assert.strictEqual(yield* store.removePrefix(one), 0)
          assert.strictEqual(yield* collect(store.get(`${two}a`)), "other project")
          assert.strictEqual(yield* reasonOf(store.removePrefix("")), "InvalidKey")
          // The prefix can be used again afterwards.
          yield* store.put(`${one}b/c`, body("again"))
          assert.strictEqual(yield* collect(store.get(`${one}b/c`)), "again")
        })
    )

    it.effect("keys outside the rules are InvalidKey on every operation, and nothing is written", () =>
      Effect.gen(function* () {
        const store = yield* Storage.ObjectStore
        const root = randomSuffix()
        const longest = `${Array.from({ length: 5 }, () => "x".repeat(200)).join("/")}/${"y".repeat(19)}`
        const bad = [
          "",
          "/a",
          "a/",
          "a//b",
          `${root}/../x`,
          `${root}/./x`,
          "..",
          "a\\b",
          "a\0b",
          `${longest}z`,
          "s".repeat(256)
        ]
        for (const key of bad) {
          assert.strictEqual(yield* reasonOf(store.put(key, body("x"))), "InvalidKey", JSON.stringify(key))
          assert.strictEqual(yield* reasonOf(collect(store.get(key))), "InvalidKey", JSON.stringify(key))
          assert.strictEqual(yield* reasonOf(store.remove(key)), "InvalidKey", JSON.stringify(key))
        }
        for (const prefix of ["/", "a//", `${root}/../`, "a\0"]) {
          assert.strictEqual(yield* reasonOf(Stream.runDrain(store.list(prefix))), "InvalidKey", prefix)
          assert.strictEqual(yield* reasonOf(store.removePrefix(prefix)), "InvalidKey", prefix)
        }
        assert.deepStrictEqual(yield* listed(store, `${root}/`), [])
        assert.strictEqual((yield* store.put(longest, body("max"))).bytes, 3)
        assert.strictEqual(yield* collect(store.get(longest)), "max")
        assert.isTrue(yield* store.remove(longest))
      })
    )
  })
