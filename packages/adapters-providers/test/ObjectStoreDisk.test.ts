import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ObjectStoreDisk } from "@hostplane/adapters-providers"
import { objectStoreSuite } from "@hostplane/testkit"
import { Effect, Stream } from "effect"
import { filesUnder, tempDir } from "./support/TempFiles.ts"

objectStoreSuite("local folder", ObjectStoreDisk.layerTemp)

const body = (value: string) => Stream.make(new TextEncoder().encode(value))

describe("ObjectStoreDisk", () => {
  it.effect("objects are files under objects/ by key (the last segment marked `~`); removal prunes empty folders", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("storage")
      const store = yield* ObjectStoreDisk.make(dir)
      yield* store.put("prj_1/a", body("a"))
      yield* store.put("prj_1/a/b~%", body("b"))
      assert.deepStrictEqual(yield* filesUnder(Path.join(dir, "objects")), [
        Path.join("prj_1", "a", "b%7E%25~"),
        Path.join("prj_1", "a~")
      ])
      assert.deepStrictEqual(yield* filesUnder(Path.join(dir, "tmp")), [])
      assert.strictEqual(yield* store.removePrefix("prj_1/"), 2)
      assert.deepStrictEqual(yield* Effect.promise(() => Fs.readdir(Path.join(dir, "objects"))), [])
    })
  )

  it.effect("a store opened again on the same folder finds its objects", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("storage")
      yield* (yield* ObjectStoreDisk.make(dir)).put("prj_2/kept.txt", body("kept"))
      const again = yield* ObjectStoreDisk.make(dir)
      const listed = Array.from(yield* Stream.runCollect(again.list("prj_2/")), ({ key, bytes }) => ({ key, bytes }))
      assert.deepStrictEqual(listed, [{ key: "prj_2/kept.txt", bytes: 4 }])
    })
  )
})
