import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
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

/**
 * The built console, as `npm ci` (the package's `prepare`) leaves it; built again here when it is missing or older
 * than the app's sources (a checkout edited since), so the tests never drive a stale build.
 */
export const ensureBuilt = (): string => {
  const manifest = join(consoleDir, ".vite/manifest.json")
  if (!existsSync(manifest) || statSync(manifest).mtimeMs < newest(join(root, "app"))) {
    execFileSync(
      process.execPath,
      [join(root, "../../node_modules/vite/bin/vite.js"), "build", "--config", "app/vite.config.ts"],
      {
        cwd: root,
        stdio: "inherit"
      }
    )
  }
  return consoleDir
}
