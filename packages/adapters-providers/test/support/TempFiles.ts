import { createHash } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"

/** A fresh temporary folder, removed with everything in it when the scope closes. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), `hostplane-${prefix}-`))),
    (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
  )

/** Every file under `dir` (none when it does not exist), as relative paths, sorted. */
export const filesUnder = (dir: string) =>
  Effect.promise(async () => {
    const entries = await Fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => Path.relative(dir, Path.join(entry.parentPath, entry.name)))
      .sort()
  })

/** The artifact digest of `bytes`: `sha256:<hex>`. */
export const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
