import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "../../..")

/** Every TypeScript source file of the packages, not their tests or builds. */
const sources = (): Array<string> =>
  Fs.readdirSync(Path.join(root, "packages"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      const src = Path.join(root, "packages", entry.name, "src")
      return Fs.existsSync(src)
        ? (Fs.readdirSync(src, { recursive: true, encoding: "utf8" }) as Array<string>)
            .filter((file) => /\.tsx?$/.test(file))
            .map((file) => Path.join(src, file))
        : []
    })

describe("ports are required dependencies", () => {
  it("no source reads a service as optional: a port left out is a compile error, not a run-time 400 or 503", () => {
    const files = sources()
    expect(files.length).toBeGreaterThan(100)
    const optional = files.filter((file) => /\bserviceOption\s*\(/.test(Fs.readFileSync(file, "utf8")))
    expect(optional.map((file) => Path.relative(root, file))).toEqual([])
  })
})
