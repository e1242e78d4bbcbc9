import { createHash, randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Storage } from "@hostplane/core"
import { type Config, Effect, Layer, Option, Stream } from "effect"
import { inDataDir } from "../DataDir.ts"

type Reason = Storage.ObjectStoreError["reason"]

const codeOf = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined

const failure = (what: string, cause: unknown, reason?: Reason) =>
  new Storage.ObjectStoreError({
    reason: reason ?? (codeOf(cause) === "ENAMETOOLONG" ? "InvalidKey" : "Unavailable"),
    message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`
  })

const io = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (cause) => failure(what, cause) })

const invalid = (problem: string | undefined) =>
  problem === undefined
    ? Effect.void
    : Effect.fail(new Storage.ObjectStoreError({ reason: "InvalidKey", message: problem }))

/**
 * A key segment as a file name: `%` and `~` escaped, so no directory name ends in `~` and a file's name does (the
 * object `a` and the objects under `a/` can both exist).
 */
const escape = (segment: string) => segment.replaceAll("%", "%25").replaceAll("~", "%7E")
const unescape = (name: string) => name.replace(/%(25|7E)/g, (_, hex: string) => (hex === "25" ? "%" : "~"))

/**
 * An object's listing from its file: the ETag from the file's identity and write time (a put renames a new file over
 * the key, so every write changes it), the upload time from its modification time.
 */
const infoOf = (key: string, stat: import("node:fs").BigIntStats): Storage.ObjectInfo => ({
  key,
  bytes: Number(stat.size),
  etag: createHash("sha256").update(`${stat.ino}:${stat.size}:${stat.mtimeNs}`).digest("hex").slice(0, 32),
  uploaded: new Date(Number(stat.mtimeMs)).toISOString()
})

const statOf = (path: string) =>
  Fs.stat(path, { bigint: true }).catch((cause: unknown) => {
    if (codeOf(cause) === "ENOENT") return undefined
    throw cause
  })

const writeAll = async (file: Fs.FileHandle, chunk: Uint8Array): Promise<void> => {
  let offset = 0
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.byteLength - offset)
    offset += bytesWritten
  }
}

/**
 * The object store in a local folder (default `<data dir>/storage/`): an object is a file at its key's segments under
 * `objects/` (the last one suffixed `~`), written to `tmp/` while it streams in, flushed, then renamed over the key,
 * so a key holds a whole object or what it held before. Empty folders are pruned on removal.
 */
export const make = Effect.fn("ObjectStoreDisk.make")(function* (dir: string) {
  const root = Path.resolve(dir)
  const objectsDir = Path.join(root, "objects")
  const tmp = Path.join(root, "tmp")
  yield* io("cannot prepare the storage folder", async () => {
    await Fs.mkdir(objectsDir, { recursive: true, mode: 0o700 })
    await Fs.mkdir(tmp, { recursive: true, mode: 0o700 })
  })

  const fileOf = (key: string) => {
    const segments = key.split("/").map(escape)
    return Path.join(objectsDir, ...segments.slice(0, -1), `${segments.at(-1)}~`)
  }

  /** Removes the empty folders from `from` up to (not including) `objects/`. */
  const prune = async (from: string) => {
    for (let folder = from; folder.startsWith(objectsDir + Path.sep); folder = Path.dirname(folder)) {
      const removed = await Fs.rmdir(folder).then(
        () => true,
        () => false
      )
      if (!removed) return
    }
  }

  const put = Effect.fn("ObjectStoreDisk.put")(function* <E>(key: string, body: Stream.Stream<Uint8Array, E>) {
    yield* invalid(Storage.keyProblem(key))
    const target = fileOf(key)
    const temp = Path.join(tmp, `${randomUUID()}.part`)
    let moved = false
    yield* Effect.addFinalizer(() => (moved ? Effect.void : Effect.promise(() => Fs.rm(temp, { force: true }))))
    const file = yield* Effect.acquireRelease(
      io("cannot create an object file", () => Fs.open(temp, "wx", 0o600)),
      (file) => Effect.promise(() => file.close())
    )
    let bytes = 0
    yield* Stream.runForEach(body, (chunk) => {
      bytes += chunk.byteLength
      return io("cannot write an object file", () => writeAll(file, chunk))
    })
    yield* io("cannot flush an object file", () => file.sync())
    yield* io(`cannot store ${key}`, async () => {
      // A removal pruning the empty folders at the same moment may take the parent away: make it again.
      for (let attempt = 1; ; attempt++) {
        await Fs.mkdir(Path.dirname(target), { recursive: true, mode: 0o700 })
        const renamed = await Fs.rename(temp, target).then(
          () => true,
          (cause: unknown) => {
            if (codeOf(cause) === "ENOENT" && attempt < 3) return false
            throw cause
          }
        )
        if (renamed) return
      }
    })
    moved = true
    const stat = yield* io(`cannot read ${key}`, () => statOf(target))
    return stat === undefined ? { key, bytes, etag: "", uploaded: new Date().toISOString() } : infoOf(key, stat)
  }, Effect.scoped)

  const head = Effect.fn("ObjectStoreDisk.head")(function* (key: string) {
    yield* invalid(Storage.keyProblem(key))
    const stat = yield* io(`cannot read ${key}`, () => statOf(fileOf(key)))
    return stat === undefined || !stat.isFile() ? Option.none() : Option.some(infoOf(key, stat))
  })

  const get = (key: string): Stream.Stream<Uint8Array, Storage.ObjectStoreError> =>
    Stream.unwrap(
      Effect.as(
        invalid(Storage.keyProblem(key)),
        NodeStream.fromReadable({
          evaluate: () => createReadStream(fileOf(key)),
          onError: (cause) => failure(`cannot read ${key}`, cause, codeOf(cause) === "ENOENT" ? "NotFound" : undefined)
        })
      )
    )

  /** The objects under `folder` (whose keys start with `keyBase`) whose next segment starts with `partial`. */
  async function* walk(folder: string, keyBase: string, partial: string): AsyncGenerator<Storage.ObjectInfo> {
    const entries = await Fs.readdir(folder, { withFileTypes: true }).catch((cause: unknown) => {
      if (codeOf(cause) === "ENOENT") return []
      throw cause
    })
    for (const entry of entries) {
      const isFile = entry.isFile() && entry.name.endsWith("~")
      const segment = unescape(isFile ? entry.name.slice(0, -1) : entry.name)
      if (!segment.startsWith(partial)) continue
      const path = Path.join(folder, entry.name)
      if (isFile) {
        const stat = await Fs.stat(path, { bigint: true }).catch(() => undefined)
        if (stat !== undefined) yield infoOf(`${keyBase}${segment}`, stat)
      } else if (entry.isDirectory()) yield* walk(path, `${keyBase}${segment}/`, "")
    }
  }

  const list = (prefix: string): Stream.Stream<Storage.ObjectInfo, Storage.ObjectStoreError> =>
    Stream.unwrap(
      Effect.map(invalid(Storage.prefixProblem(prefix)), () => {
        const segments = prefix.split("/")
        const complete = segments.slice(0, -1)
        const folder = Path.join(objectsDir, ...complete.map(escape))
        const keyBase = complete.length === 0 ? "" : `${complete.join("/")}/`
        return Stream.fromAsyncIterable(walk(folder, keyBase, segments.at(-1)!), (cause) =>
          failure(`cannot list ${prefix}`, cause)
        )
      })
    )

  const removeFile = (key: string) =>
    io(`cannot remove ${key}`, async () => {
      const file = fileOf(key)
      const removed = await Fs.rm(file).then(
        () => true,
        (cause: unknown) => {
          if (codeOf(cause) === "ENOENT") return false
          throw cause
        }
      )
      await prune(Path.dirname(file))
      return removed
    })

  const remove = Effect.fn("ObjectStoreDisk.remove")(function* (key: string) {
    yield* invalid(Storage.keyProblem(key))
    return yield* removeFile(key)
  })

  const removePrefix = Effect.fn("ObjectStoreDisk.removePrefix")(function* (prefix: string) {
    yield* invalid(prefix === "" ? "removing every object takes a prefix" : Storage.prefixProblem(prefix))
    return yield* Stream.runFoldEffect(
      list(prefix),
      () => 0,
      (count, object) => Effect.map(removeFile(object.key), (removed) => (removed ? count + 1 : count))
    )
  })

  return Storage.ObjectStore.of({ put, head, get, list, remove, removePrefix })
})

export const layer = (dir: string): Layer.Layer<Storage.ObjectStore, Storage.ObjectStoreError> =>
  Layer.effect(Storage.ObjectStore, make(dir))

/** The storage folder: `<SERVICE_DATA_DIR or .hostplane>/storage`. */
export const dirConfig: Config.Config<string> = inDataDir("storage")

export const layerConfig = Layer.unwrap(Effect.map(dirConfig, layer))

/** A store in a fresh temporary folder, removed when the layer is released: tests. */
export const layerTemp: Layer.Layer<Storage.ObjectStore, Storage.ObjectStoreError> = Layer.effect(
  Storage.ObjectStore,
  Effect.acquireRelease(
    Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-storage-"))),
    (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
  ).pipe(Effect.flatMap(make))
)
