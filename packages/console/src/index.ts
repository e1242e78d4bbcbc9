import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { extname, join, relative } from "node:path"
import { fileURLToPath } from "node:url"

/** Where `npm ci` (the package's `prepare`) or `npm run build -w @hostplane/console` puts the built console. */
export const consoleDir = fileURLToPath(new URL("../dist/app/", import.meta.url))

/** One built file, served under `/console/<path>`. */
export interface ConsoleFile {
  readonly body: Uint8Array
  readonly contentType: string
}

/** The built console: its `index.html` (every console URL answers it) and the hashed files it loads. */
export interface ConsoleFiles {
  readonly index: string
  readonly files: ReadonlyMap<string, ConsoleFile>
}

const contentTypes: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".json": "application/json"
}

/**
 * The built console read into memory (a few hundred KB, read once at start), or undefined when it was never built
 * (a checkout where `npm ci` did not run the package's `prepare`).
 */
export const loadConsole = (dir: string = consoleDir): ConsoleFiles | undefined => {
  const indexPath = join(dir, "index.html")
  if (!existsSync(indexPath)) return undefined
  const files = new Map<string, ConsoleFile>()
  const walk = (folder: string): void => {
    for (const name of readdirSync(folder)) {
      const path = join(folder, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (!path.startsWith(join(dir, ".vite")) && name !== "index.html") {
        const type = contentTypes[extname(name)]
        if (type !== undefined)
          files.set(relative(dir, path).split("\\").join("/"), { body: readFileSync(path), contentType: type })
      }
    }
  }
  walk(dir)
  return { index: readFileSync(indexPath, "utf8"), files }
}
