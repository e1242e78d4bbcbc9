import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { binaries, type Manifest, outdated, root } from "../scripts/bundle.mjs"

/** `npm start` runs the binary's bundle (`scripts/start.mjs`), built again first when it is older than its inputs. */
describe("the bundle npm start runs", () => {
  const source = binaries.server.entry
  const modified = statSync(join(root, source)).mtimeMs

  it("is current when built after every source it was built from", () => {
    expect(outdated({ builtAt: modified + 1, sources: [source] })).toBe(false)
  })

  it("is rebuilt when a source it was built from changed since the build started", () => {
    expect(outdated({ builtAt: modified - 1, sources: [source] })).toBe(true)
    expect(outdated({ builtAt: modified, sources: [source] })).toBe(true)
  })

  it("is rebuilt when a source it was built from is gone", () => {
    expect(outdated({ builtAt: modified + 1, sources: [source, "packages/server/src/NoSuchModule.ts"] })).toBe(true)
  })

  it("is rebuilt when the packages were installed again or the build changed", () => {
    for (const input of ["node_modules/.package-lock.json", "packages/server/scripts/bundle.mjs"]) {
      const changed = statSync(join(root, input)).mtimeMs
      expect(outdated({ builtAt: changed - 1, sources: [source, input] }), input).toBe(true)
      expect(outdated({ builtAt: changed + 1, sources: [input] }), input).toBe(false)
    }
  })

  it("lists what it was built from: hostplane's sources, the installed packages and the build itself", () => {
    for (const name of ["server", "node"] as const) {
      const manifest = JSON.parse(readFileSync(join(root, `${binaries[name].bundle}.json`), "utf8")) as Manifest
      expect(manifest.sources).toContain(binaries[name].entry)
      expect(manifest.sources).toContain("node_modules/.package-lock.json")
      expect(manifest.sources).toContain("packages/server/scripts/bundle.mjs")
      expect(manifest.sources.some((path) => path.includes("node_modules/effect"))).toBe(false)
    }
    const server = JSON.parse(readFileSync(join(root, `${binaries.server.bundle}.json`), "utf8")) as Manifest
    expect(server.sources).toContain("packages/core/src/kernel/Policy.ts")
  })

  it("lists only files, so a bundle built after its sources is current", () => {
    for (const name of ["server", "node"] as const) {
      const manifest = JSON.parse(readFileSync(join(root, `${binaries[name].bundle}.json`), "utf8")) as Manifest
      const missing = manifest.sources.filter((path) => !existsSync(join(root, path)))
      expect(missing).toEqual([])
    }
  })

  it("has the upload thread's bundle beside it, which reads a bundle under npm start's node flags", async () => {
    for (const name of ["server", "node"] as const) {
      expect(existsSync(join(root, binaries[name].bundle, "..", "inflate-thread.mjs")), name).toBe(true)
    }
    const dir = mkdtempSync(join(tmpdir(), "hostplane-inflate-thread-"))
    try {
      const file = join(dir, "bundle.tar.gz")
      writeFileSync(file, await Effect.runPromise(bundleOf([manifestEntry(), { name: "assets/a.txt", content: "a" }])))
      const thread = pathToFileURL(join(root, binaries.server.bundle, "..", "inflate-thread.mjs")).href
      const module = (path: string) => JSON.stringify(pathToFileURL(join(root, path)).href)
      const deployments = "packages/adapters-providers/src/deployments"
      // The reader takes the thread's URL as the server's bundle gives it, before its module is loaded.
      const script = join(dir, "read.mjs")
      writeFileSync(
        script,
        `globalThis.hostplaneInflateThread = ${JSON.stringify(thread)}
        const { createReadStream } = await import("node:fs")
        const { Effect } = await import(${module("node_modules/effect/dist/index.js")})
        const ArtifactStoreDisk = await import(${module(`${deployments}/ArtifactStoreDisk.ts`)})
        const BundleReader = await import(${module(`${deployments}/BundleReader.ts`)})
        const read = await Effect.runPromise(Effect.gen(function* () {
          const store = yield* ArtifactStoreDisk.make(${JSON.stringify(join(dir, "artifacts"))})
          const reader = BundleReader.make(store, { workerFromBytes: 0 })
          return yield* reader.read(BundleReader.bodyFrom(createReadStream(${JSON.stringify(file)})))
        }))
        console.log(JSON.stringify({ files: read.files, bytes: read.bytes }))`
      )
      const flags = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts.start.match(/--[\w-]+=\S+/g)
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [...flags, "--conditions=@hostplane/source", script],
        { cwd: root }
      )
      expect(JSON.parse(stdout)).toEqual({ files: 2, bytes: statSync(file).size })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  it("requires Node's builtins and the packages outside it instead of importing them (no ES facades at start)", () => {
    for (const name of ["server", "node"] as const) {
      const text = readFileSync(join(root, binaries[name].bundle), "utf8")
      const imported = [...text.matchAll(/^import\s[^;]*?from\s*"([^"]+)"/gmu)].map((match) => match[1])
      expect(new Set(imported)).toEqual(new Set(["node:module"]))
      expect(text).toContain('__hostplaneRequire("node:http")')
    }
  })
})
