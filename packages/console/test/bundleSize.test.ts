import { readFileSync } from "node:fs"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { ensureBuilt } from "./support/build.ts"

interface Chunk {
  readonly file: string
  readonly isEntry?: boolean
  readonly imports?: ReadonlyArray<string>
  readonly dynamicImports?: ReadonlyArray<string>
  readonly css?: ReadonlyArray<string>
}

/** decisions.md part 14: the first load of any page is at most 200 KiB of gzip-compressed JavaScript. */
const budget = 200 * 1024

describe("the console's first load", () => {
  it("is at most 200 KiB of gzip JavaScript for every page: the entry, its imports and the page's chunk", () => {
    const dir = ensureBuilt()
    const manifest = JSON.parse(readFileSync(join(dir, ".vite/manifest.json"), "utf8")) as Record<string, Chunk>
    const gzip = (file: string) => gzipSync(readFileSync(join(dir, file)), { level: 9 }).length
    const closure = (key: string, seen = new Set<string>()): Set<string> => {
      if (seen.has(key)) return seen
      seen.add(key)
      for (const next of manifest[key]!.imports ?? []) closure(next, seen)
      return seen
    }
    const entry = Object.keys(manifest).find((key) => manifest[key]!.isEntry === true)!
    const pages = manifest[entry]!.dynamicImports ?? []
    // Every console page is its own chunk, loaded with the entry on its first load.
    expect(pages.length).toBeGreaterThanOrEqual(19)
    const sizes = [entry, ...pages].map((page) => {
      const files = new Set([...closure(entry), ...closure(page)])
      return { page, gzip: [...files].reduce((sum, key) => sum + gzip(manifest[key]!.file), 0) }
    })
    const largest = sizes.reduce((a, b) => (b.gzip > a.gzip ? b : a))
    console.info(
      `console first load (gzip JavaScript): entry ${sizes[0]!.gzip} bytes; largest page ${largest.page} ${largest.gzip} bytes of ${budget}`
    )
    for (const { page, gzip: size } of sizes) expect(size, page).toBeLessThanOrEqual(budget)
  })
})
