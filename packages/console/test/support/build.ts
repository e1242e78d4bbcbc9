import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { consoleDir } from "../../src/index.ts"

const root = join(import.meta.dirname, "../..")

const newest = (folder: string): number =>
  Math.max(
    0,
    ...readdirSync(folder, { withFileTypes: true }).map((entry) =>
      entry.isDirectory() ? newest(join(folder, entry.name)) : statSync(join(folder, entry.name)).mtimeMs
    )
  )

const stale = (manifest: string) => !existsSync(manifest) || statSync(manifest).mtimeMs < newest(join(root, "app"))

const pause = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/**
 * The built console, as `npm ci` (the package's `prepare`) leaves it; built again here when it is missing or older
 * than the app's sources (a checkout edited since), so the tests never drive a stale build. One build at a time:
 * test files in other workers check at once, and a build empties the folder another one may be reading.
 */
export const ensureBuilt = (): string => {
  const manifest = join(consoleDir, ".vite/manifest.json")
  if (!stale(manifest)) return consoleDir
  const lock = join(root, "dist/.console-build-lock")
  mkdirSync(join(root, "dist"), { recursive: true })
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      // A lock left by a killed run (a build takes seconds, not minutes) is taken over.
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 300_000) rmSync(lock, { recursive: true })
      else pause(250)
    }
  }
  try {
    if (stale(manifest)) {
      execFileSync(
        process.execPath,
        [join(root, "../../node_modules/vite/bin/vite.js"), "build", "--config", "app/vite.config.ts"],
        { cwd: root, stdio: "inherit" }
      )
    }
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
  return consoleDir
}
