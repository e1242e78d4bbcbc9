import { createHash, randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { NodeStream } from "@effect/platform-node"
import { Database } from "@hostplane/core"
import { type Config, Effect, Layer, Stream } from "effect"
import { inDataDir } from "../DataDir.ts"

const fail = (what: string) => (cause: unknown) =>
  new Database.BackupStoreError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const io = <A>(what: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: fail(what) })

/** A key is a relative path of safe segments: it never leaves the folder. */
const keyPattern = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/

const writeAll = async (file: Fs.FileHandle, chunk: Uint8Array): Promise<void> => {
  let offset = 0
  while (offset < chunk.byteLength) {
    const { bytesWritten } = await file.write(chunk, offset, chunk.byteLength - offset)
    offset += bytesWritten
  }
}

/**
 * The backup store in a local folder (decisions.md part 8: `<data dir>/backups/`): an image is written to a temporary
 * file while it is hashed, flushed, then renamed to its key, so a key holds a whole image or nothing.
 */
export const make = Effect.fn("BackupStoreDisk.make")(function* (dir: string) {
  const root = Path.resolve(dir)
  const tmp = Path.join(root, ".tmp")
  yield* io("cannot prepare the backup folder", () => Fs.mkdir(tmp, { recursive: true, mode: 0o700 }))
  const pathOf = (key: string) =>
    keyPattern.test(key) ? Effect.succeed(Path.join(root, key)) : Effect.die(new Error(`bad backup key ${key}`))

  const put = Effect.fn("BackupStoreDisk.put")(function* <E>(key: string, image: Stream.Stream<Uint8Array, E>) {
    const target = yield* pathOf(key)
    const temp = Path.join(tmp, `${randomUUID()}.part`)
    let moved = false
    yield* Effect.addFinalizer(() => (moved ? Effect.void : Effect.promise(() => Fs.rm(temp, { force: true }))))
    const file = yield* Effect.acquireRelease(
      io("cannot create a backup file", () => Fs.open(temp, "wx", 0o600)),
      (file) => Effect.promise(() => file.close())
    )
    const hash = createHash("sha256")
    let bytes = 0
    yield* Stream.runForEach(image, (chunk) => {
      hash.update(chunk)
      bytes += chunk.byteLength
      return io("cannot write a backup file", () => writeAll(file, chunk))
    })
    yield* io("cannot flush a backup file", () => file.sync())
    yield* io("cannot store a backup file", async () => {
      await Fs.mkdir(Path.dirname(target), { recursive: true, mode: 0o700 })
      await Fs.rename(temp, target)
    })
    moved = true
    return { bytes, sha256: hash.digest("hex") }
  }, Effect.scoped)

  const read = (key: string): Stream.Stream<Uint8Array, Database.BackupStoreError> =>
    Stream.unwrap(
      Effect.map(pathOf(key), (file) =>
        NodeStream.fromReadable({ evaluate: () => createReadStream(file), onError: fail(`cannot read ${key}`) })
      )
    )

  const digest = Effect.fn("BackupStoreDisk.digest")(function* (key: string) {
    const file = yield* pathOf(key)
    const present = yield* Effect.promise(() =>
      Fs.access(file).then(
        () => true,
        () => false
      )
    )
    if (!present) return undefined
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

  const remove = Effect.fn("BackupStoreDisk.remove")(function* (key: string) {
    const file = yield* pathOf(key)
    yield* io(`cannot remove ${key}`, () => Fs.rm(file, { force: true }))
  })

  return Database.BackupStore.of({ put, read, digest, remove })
})

export const layer = (dir: string): Layer.Layer<Database.BackupStore, Database.BackupStoreError> =>
  Layer.effect(Database.BackupStore, make(dir))

/** The backup folder of decisions.md part 8: `<SERVICE_DATA_DIR or .hostplane>/backups`. */
export const dirConfig: Config.Config<string> = inDataDir("backups")

export const layerConfig = Layer.unwrap(Effect.map(dirConfig, layer))

/** A store in a fresh temporary folder, removed when the layer is released: tests. */
export const layerTemp: Layer.Layer<Database.BackupStore, Database.BackupStoreError> = Layer.effect(
  Database.BackupStore,
  Effect.acquireRelease(
    Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-backups-"))),
    (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
  ).pipe(Effect.flatMap(make))
)
