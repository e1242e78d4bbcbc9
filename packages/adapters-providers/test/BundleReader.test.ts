import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { promisify } from "node:util"
import { gunzipSync, gzipSync } from "node:zlib"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactStoreDisk, BundleReader } from "@hostplane/adapters-providers"
import { Deployments } from "@hostplane/core"
import { type BundleEntry, bundleOf, manifestEntry, sampleEntries, streamOfBytes, tarOf } from "@hostplane/testkit"
import { Effect, Option, Stream } from "effect"
import { filesUnder, sha256, tempDir } from "./support/TempFiles.ts"

const utf8 = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")

/** A reader over a fresh disk store; `limits` replace decisions.md's for speed. */
const setup = (limits: Partial<Deployments.BundleLimits> = {}) =>
  Effect.gen(function* () {
    const dir = yield* tempDir("bundles")
    const store = yield* ArtifactStoreDisk.make(dir)
    return { dir, store, reader: BundleReader.make(store, { limits }) }
  })

/** The upload is refused with this reason, and nothing is left in the store, not even a temporary file. */
const refused = (entries: ReadonlyArray<BundleEntry>, reason: Deployments.BundleProblem) =>
  Effect.gen(function* () {
    const { dir, reader } = yield* setup()
    const bytes = yield* bundleOf(entries)
    const error = yield* Effect.flip(reader.read(streamOfBytes(bytes, 512)))
    assert.strictEqual(error._tag, "InvalidBundle")
    assert.strictEqual(error.details?.["reason"], reason, error.message)
    assert.deepStrictEqual(yield* filesUnder(dir), [])
    return error
  })

const refusedBytes = (bytes: Uint8Array, reason: Deployments.BundleProblem) =>
  Effect.gen(function* () {
    const { dir, reader } = yield* setup()
    const error = yield* Effect.flip(reader.read(streamOfBytes(bytes, 512)))
    assert.strictEqual(error._tag, "InvalidBundle")
    assert.strictEqual(error.details?.["reason"], reason, error.message)
    assert.deepStrictEqual(yield* filesUnder(dir), [])
  })

const manifest = manifestEntry()

describe("BundleReader", () => {
  it.effect("a good bundle is stored under the sha256 of its bytes with its manifest, file count and sizes", () =>
    Effect.gen(function* () {
      const { store, reader } = yield* setup()
      const bytes = yield* bundleOf(sampleEntries)
      const read = yield* reader.read(streamOfBytes(bytes, 100))
      const index = yield* store.index(read.digest)
      assert.isTrue(Option.isSome(index))
      assert.deepStrictEqual(read, {
        digest: sha256(bytes),
        bytes: bytes.byteLength,
        files: 4,
        uncompressedBytes: gunzipSync(bytes).byteLength,
        manifest: { name: "site", main: "worker/index.js", database: true, ai: false },
        // Both new in this store: the bundle and its inflated tar.
        created: [read.digest, Option.getOrThrow(index).tar]
      })
      assert.isTrue(yield* store.has(read.digest))
      assert.deepStrictEqual(Buffer.from(yield* Stream.mkUint8Array(store.open(read.digest))), Buffer.from(bytes))
    })
  )

  it.effect("an accepted bundle is indexed: the edge reads assets/<path> without inflating the bundle", () =>
    Effect.gen(function* () {
      const { store, reader } = yield* setup()
      const bytes = yield* bundleOf(sampleEntries)
      const read = yield* reader.read(streamOfBytes(bytes))
      const index = Option.getOrThrow(yield* store.index(read.digest))
      assert.deepStrictEqual(
        index.files.map((file) => file.path),
        ["service.json", "worker/index.js", "assets/index.html", "assets/css/app.css"]
      )
      assert.strictEqual(index.tar, sha256(gunzipSync(bytes)), "the inflated tar is an artifact of its own")
      const css = Option.getOrThrow(yield* store.file(read.digest, "assets/css/app.css"))
      assert.strictEqual(css.bytes, "h1 { color: teal }\n".length)
      assert.strictEqual(utf8(yield* Stream.mkUint8Array(css.content)), "h1 { color: teal }\n")
      const html = Option.getOrThrow(yield* store.file(read.digest, "assets/index.html"))
      assert.strictEqual(utf8(yield* Stream.mkUint8Array(html.content)), "<!doctype html><h1>hi</h1>\n")
      assert.isTrue(Option.isNone(yield* store.file(read.digest, "assets/nope.css")))
      assert.isTrue(Option.isNone(yield* store.file(read.digest, "assets/css")), "folders are not files")
    })
  )

  it.effect("files with pax headers, long names and empty bodies are read back from the right offsets", () =>
    Effect.gen(function* () {
      const { store, reader } = yield* setup()
      const long = `assets/${"deep/".repeat(30)}file.txt`
      const entries: ReadonlyArray<BundleEntry> = [
        manifest,
        { name: "assets/empty.txt", content: "" },
        { name: "assets/café.txt", content: "pax named" },
        { name: long, content: "long named" },
        { name: "assets/blob.bin", content: randomBytes(70_000) }
      ]
      const read = yield* reader.read(streamOfBytes(yield* bundleOf(entries)))
      for (const entry of entries) {
        const found = Option.getOrThrow(yield* store.file(read.digest, entry.name as string))
        const expected = typeof entry.content === "string" ? Buffer.from(entry.content) : Buffer.from(entry.content!)
        assert.deepStrictEqual(Buffer.from(yield* Stream.mkUint8Array(found.content)), expected, entry.name as string)
      }
    })
  )

  it.effect("the same bundle uploaded twice is stored once", () =>
    Effect.gen(function* () {
      const { dir, reader } = yield* setup()
      const bytes = yield* bundleOf(sampleEntries)
      const first = yield* reader.read(streamOfBytes(bytes, 1000))
      const stored = yield* filesUnder(dir)
      const second = yield* reader.read(streamOfBytes(bytes, 7))
      // The second read created nothing: a refusal of it would discard nothing the first one stored.
      assert.deepStrictEqual(second, { ...first, created: [] })
      assert.strictEqual(first.created.length, 2)
      assert.deepStrictEqual(yield* filesUnder(dir), stored)
    })
  )

  it.effect("unknown manifest keys are ignored and dropped; every flag is optional", () =>
    Effect.gen(function* () {
      const { reader } = yield* setup()
      const bytes = yield* bundleOf([manifestEntry({ name: "x", storage: true, unknown: { deep: 1 }, replicas: 3 })])
      const read = yield* reader.read(streamOfBytes(bytes))
      assert.deepStrictEqual(read.manifest, { name: "x", storage: true })
      assert.strictEqual(read.files, 1)
      const empty = yield* reader.read(streamOfBytes(yield* bundleOf([manifestEntry({})])))
      assert.deepStrictEqual(empty.manifest, {})
    })
  )

  it.effect("entries written as ./path and a ./ root folder (tar -C dir .) are accepted", () =>
    Effect.gen(function* () {
      const { store, reader } = yield* setup()
      const bytes = yield* bundleOf([
        { name: "./", type: "directory" },
        { name: "./service.json", content: "{}" },
        { name: "./assets/", type: "directory" },
        { name: "./assets/a.txt", content: "a" }
      ])
      const read = yield* reader.read(streamOfBytes(bytes))
      assert.strictEqual(read.files, 2)
      assert.isTrue(Option.isSome(yield* store.file(read.digest, "assets/a.txt")))
    })
  )

  it.effect("non-ASCII UTF-8 names (pax and plain ustar) are accepted", () =>
    Effect.gen(function* () {
      const { store, reader } = yield* setup()
      const bytes = yield* bundleOf([
        manifest,
        { name: "assets/café.txt", content: "pax" },
        { name: new TextEncoder().encode("assets/naïve.txt"), content: "ustar" }
      ])
      const read = yield* reader.read(streamOfBytes(bytes))
      assert.isTrue(Option.isSome(yield* store.file(read.digest, "assets/café.txt")))
      assert.isTrue(Option.isSome(yield* store.file(read.digest, "assets/naïve.txt")))
    })
  )

  it.effect("a bundle made by the system tar (-czf, ./ prefixes, gnu format) is accepted", () =>
    Effect.gen(function* () {
      const { reader } = yield* setup()
      const src = yield* tempDir("bundles")
      yield* Effect.promise(async () => {
        await Fs.mkdir(Path.join(src, "assets", "img"), { recursive: true })
        await Fs.mkdir(Path.join(src, "worker"))
        await Fs.writeFile(Path.join(src, "service.json"), JSON.stringify({ name: "cli", email: true }))
        await Fs.writeFile(Path.join(src, "worker", "index.js"), "export default {}\n")
        await Fs.writeFile(Path.join(src, "assets", "img", "logo.svg"), "<svg/>")
        await promisify(execFile)("tar", ["-czf", Path.join(src, "..", `${Path.basename(src)}.tgz`), "-C", src, "."])
      })
      const archive = Path.join(src, "..", `${Path.basename(src)}.tgz`)
      const bytes = yield* Effect.promise(() => Fs.readFile(archive))
      yield* Effect.promise(() => Fs.rm(archive))
      const read = yield* reader.read(streamOfBytes(bytes))
      assert.deepStrictEqual(read.manifest, { name: "cli", email: true })
      assert.strictEqual(read.files, 3)
    })
  )

  describe("hostile entries are 400 invalid_bundle with details.reason", () => {
    it.effect("a '..' segment is path_traversal", () =>
      Effect.gen(function* () {
        const error = yield* refused([manifest, { name: "assets/../../etc/passwd", content: "x" }], "path_traversal")
        assert.strictEqual(error.details?.["path"], "assets/../../etc/passwd")
      })
    )
    it.effect("a leading '../' is path_traversal", () =>
      refused([manifest, { name: "../outside.txt", content: "x" }], "path_traversal")
    )
    it.effect("an absolute path is absolute_path", () =>
      refused([manifest, { name: "/etc/passwd", content: "x" }], "absolute_path")
    )
    it.effect("a symbolic link is symlink", () =>
      refused([manifest, { name: "assets/link", type: "symlink", linkname: "/etc/passwd" }], "symlink")
    )
    it.effect("a hard link is hard_link", () =>
      refused([manifest, { name: "assets/hard", type: "link", linkname: "service.json" }], "hard_link")
    )
    it.effect("a character device is special_file", () =>
      refused([manifest, { name: "assets/tty", type: "character-device" }], "special_file")
    )
    it.effect("a block device is special_file", () =>
      refused([manifest, { name: "assets/sda", type: "block-device" }], "special_file")
    )
    it.effect("a fifo is special_file", () =>
      refused([manifest, { name: "assets/pipe", type: "fifo" }], "special_file")
    )
    it.effect("a file outside service.json, worker/ and assets/ is outside_layout", () =>
      refused([manifest, { name: "README.md", content: "x" }], "outside_layout")
    )
    it.effect("a folder outside the layout is outside_layout", () =>
      refused([manifest, { name: "node_modules/", type: "directory" }], "outside_layout")
    )
    it.effect("a file named worker (not a folder) is outside_layout", () =>
      refused([manifest, { name: "worker", content: "x" }], "outside_layout")
    )
    it.effect("a manifest-like name in a subfolder does not count as the manifest", () =>
      refused([{ name: "assets/service.json", content: "{}" }], "manifest_missing")
    )
    it.effect("the same path twice is duplicate_path", () =>
      refused(
        [manifest, { name: "assets/a.txt", content: "1" }, { name: "assets/a.txt", content: "2" }],
        "duplicate_path"
      )
    )
    it.effect("the same path spelled with ./ is duplicate_path", () =>
      refused(
        [manifest, { name: "assets/a.txt", content: "1" }, { name: "./assets/a.txt", content: "2" }],
        "duplicate_path"
      )
    )
    it.effect("service.json twice is duplicate_path", () => refused([manifest, manifest], "duplicate_path"))
    it.effect("a name that is not UTF-8 is name_not_utf8", () =>
      refused(
        [manifest, { name: new Uint8Array([...Buffer.from("assets/bad-"), 0xff, 0xfe, 0x2e]), content: "x" }],
        "name_not_utf8"
      )
    )
    it.effect("a NUL in a (pax) name is nul_in_name", () =>
      refused([manifest, { name: "assets/a\u0000.txt", content: "x", pax: {} }], "nul_in_name")
    )
    it.effect("a backslash or an empty segment is bad_path", () =>
      Effect.gen(function* () {
        yield* refused([manifest, { name: "assets\\win.txt", content: "x" }], "bad_path")
        yield* refused([manifest, { name: "assets//double.txt", content: "x" }], "bad_path")
        yield* refused([manifest, { name: "assets/./dot.txt", content: "x" }], "bad_path")
      })
    )
    it.effect("a name longer than the path limit is path_too_long", () =>
      refused(
        [manifest, { name: `assets/${"a".repeat(Deployments.entryPathMaxLength)}`, content: "x" }],
        "path_too_long"
      )
    )
    it.effect("a contiguous file (type 7) is unsupported_entry", () =>
      refused([manifest, { name: "assets/c.bin", type: "contiguous-file", content: "x" }], "unsupported_entry")
    )
  })

  describe("the manifest", () => {
    it.effect("a bundle without service.json is manifest_missing", () =>
      refused([{ name: "assets/index.html", content: "<h1>" }], "manifest_missing")
    )
    it.effect("an empty bundle is manifest_missing", () => refused([], "manifest_missing"))
    it.effect("service.json that is not JSON is manifest_not_json", () =>
      refused([{ name: "service.json", content: "{ name: site" }], "manifest_not_json")
    )
    it.effect("service.json that is not UTF-8 is manifest_not_json", () =>
      refused([{ name: "service.json", content: new Uint8Array([0x7b, 0xff, 0x7d]) }], "manifest_not_json")
    )
    it.effect("wrong types are manifest_invalid with the issues", () =>
      Effect.gen(function* () {
        const error = yield* refused([manifestEntry({ name: 7, database: "yes" })], "manifest_invalid")
        const issues = error.details?.["issues"] as ReadonlyArray<{ path: ReadonlyArray<string> }>
        assert.deepStrictEqual(issues.map((issue) => issue.path).sort(), [["database"], ["name"]])
      })
    )
    it.effect("a JSON array or null is manifest_invalid", () =>
      Effect.gen(function* () {
        yield* refused([manifestEntry([1, 2])], "manifest_invalid")
        yield* refused([manifestEntry(null)], "manifest_invalid")
      })
    )
    it.effect("service.json as a folder is manifest_not_file", () =>
      refused([{ name: "service.json/", type: "directory" }], "manifest_not_file")
    )
    it.effect("a manifest above 64 KiB is manifest_too_large", () =>
      refused([manifestEntry({ name: "x".repeat(Deployments.manifestMaxBytes) })], "manifest_too_large")
    )
  })

  describe("broken archives", () => {
    it.effect("a truncated gzip stream is truncated", () =>
      Effect.gen(function* () {
        const bytes = yield* bundleOf(sampleEntries)
        yield* refusedBytes(bytes.subarray(0, bytes.byteLength - 12), "truncated")
      })
    )
    it.effect("an empty body is truncated", () => refusedBytes(new Uint8Array(0), "truncated"))
    it.effect("bytes that are not gzip are corrupt_gzip", () => refusedBytes(randomBytes(4096), "corrupt_gzip"))
    it.effect("a gzip stream whose bytes get corrupted midway is corrupt_gzip", () =>
      Effect.gen(function* () {
        const bytes = Buffer.from(yield* bundleOf([manifest, { name: "assets/r.bin", content: randomBytes(200_000) }]))
        bytes.fill(0x55, 50_000, 60_000)
        yield* refusedBytes(bytes, "corrupt_gzip")
      })
    )
    it.effect("gzip of something that is not a tar is corrupt_tar", () =>
      refusedBytes(gzipSync(Buffer.from("just some text, not a tar archive\n".repeat(100))), "corrupt_tar")
    )
    it.effect("a tar cut inside an entry (in a whole gzip stream) is truncated", () =>
      Effect.gen(function* () {
        const tar = yield* tarOf([manifest, { name: "assets/big.txt", content: "y".repeat(10_000) }])
        yield* refusedBytes(gzipSync(tar.subarray(0, 512 * 3)), "truncated")
      })
    )
  })

  describe("limits are 413 with details { measure, limit, value } and reading stops there", () => {
    it.effect("compressed bytes above the limit", () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup({ compressedBytes: 10_000 })
        const bytes = yield* bundleOf([manifest, { name: "assets/noise.bin", content: randomBytes(100_000) }])
        let pulled = 0
        const body = streamOfBytes(bytes, 1000).pipe(Stream.tap(() => Effect.sync(() => void pulled++)))
        const error = yield* Effect.flip(reader.read(body))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.deepStrictEqual(error.details, { measure: "compressed_bytes", limit: 10_000, value: 11_000 })
        assert.isBelow(pulled, 15, "the body is not read past the limit")
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      })
    )

    it.effect("uncompressed bytes above the limit (declared by a header): the upload stops there", () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup({ uncompressedBytes: 64 * 1024 })
        const bytes = yield* bundleOf([manifest, { name: "assets/big.bin", content: randomBytes(2 * 1024 * 1024) }])
        let pulled = 0
        const body = streamOfBytes(bytes, 1024).pipe(Stream.tap(() => Effect.sync(() => void pulled++)))
        const error = yield* Effect.flip(reader.read(body))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.strictEqual(error.details?.["measure"], "uncompressed_bytes")
        assert.strictEqual(error.details?.["limit"], 64 * 1024)
        assert.isAbove(error.details?.["value"] as number, 64 * 1024)
        assert.isBelow(pulled, 256, `read ${pulled} of ${Math.ceil(bytes.byteLength / 1024)} chunks`)
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      })
    )

    it.effect("uncompressed bytes above the limit (many small files: inflated bytes counted)", () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup({ uncompressedBytes: 20 * 1024 })
        const entries = Array.from({ length: 50 }, (_, n): BundleEntry => ({ name: `assets/${n}.txt`, content: "s" }))
        const bytes = yield* bundleOf([manifest, ...entries])
        const error = yield* Effect.flip(reader.read(streamOfBytes(bytes)))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.strictEqual(error.details?.["measure"], "uncompressed_bytes")
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      })
    )

    it.effect("entries above the limit (folders count too)", () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup({ entries: 5 })
        const folders = Array.from({ length: 10 }, (_, n): BundleEntry => ({
          name: `assets/d${n}/`,
          type: "directory"
        }))
        const bytes = yield* bundleOf([manifest, ...folders])
        const error = yield* Effect.flip(reader.read(streamOfBytes(bytes)))
        assert.strictEqual(error._tag, "PayloadTooLarge")
        assert.deepStrictEqual(error.details, { measure: "entries", limit: 5, value: 6 })
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      })
    )

    it.effect("a bundle exactly at every limit is accepted", () =>
      Effect.gen(function* () {
        const bytes = yield* bundleOf(sampleEntries)
        const tar = gunzipSync(bytes)
        const { reader } = yield* setup({
          compressedBytes: bytes.byteLength,
          uncompressedBytes: tar.byteLength,
          entries: sampleEntries.length
        })
        const read = yield* reader.read(streamOfBytes(bytes))
        assert.strictEqual(read.bytes, bytes.byteLength)
      })
    )

    it.effect("a failing body fails the read with its own error and commits nothing", () =>
      Effect.gen(function* () {
        const { dir, reader } = yield* setup()
        const bytes = yield* bundleOf(sampleEntries)
        const body = Stream.concat(streamOfBytes(bytes.subarray(0, 100)), Stream.fail("connection reset" as const))
        assert.strictEqual(yield* Effect.flip(reader.read(body)), "connection reset")
        assert.deepStrictEqual(yield* filesUnder(dir), [])
      })
    )
  })
})
