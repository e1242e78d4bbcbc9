import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { binaries, buildOptions, type Manifest, outdated, root } from "../scripts/bundle.mjs"

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

  it("requires Node's builtins and the packages outside it instead of importing them (no ES facades at start)", () => {
    for (const name of ["server", "node"] as const) {
      const text = readFileSync(join(root, binaries[name].bundle), "utf8")
      const imported = [...text.matchAll(/^import\s[^;]*?from\s*"([^"]+)"/gmu)].map((match) => match[1])
      expect(new Set(imported)).toEqual(new Set(["node:module"]))
      expect(text).toContain('__hostplaneRequire("node:http")')
    }
  })

  it("loads a package outside it at the package's first use, not when the bundle starts; a package that is a class still constructs and is extended", async () => {
    const { build } = await import("esbuild")
    const entry = `
      import { createRequire } from "node:module"
      import ssh2 from "ssh2"
      import WebSocket, { WebSocketServer } from "ws"
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((path) => /node_modules\\/(ssh2|ws)\\//.test(path)).map((path) => path.match(/node_modules\\/(ssh2|ws)\\//)[1])
      const atStart = [...new Set(loaded())]
      const server = typeof ssh2.Server
      const afterSsh2 = [...new Set(loaded())]
      // A class extending the package itself, defined before it loads, as a host's module may do.
      class Client extends WebSocket {}
      const wss = new WebSocketServer({ noServer: true })
      const direct = new WebSocket("ws://127.0.0.1:9")
      const extended = new Client("ws://127.0.0.1:9")
      for (const socket of [direct, extended]) socket.on("error", () => {})
      const instances = [direct, extended].map((socket) => [typeof socket.terminate, socket instanceof WebSocket])
      for (const socket of [direct, extended]) socket.terminate()
      console.log(JSON.stringify({ atStart, server, afterSsh2, afterWs: [...new Set(loaded())].sort(), open: WebSocket.OPEN, constructs: wss instanceof WebSocketServer, instances }))
    `
    const outfile = join(root, "packages/server/bundle", `lazy-test-${process.pid}.mjs`)
    try {
      await build({ ...buildOptions, stdin: { contents: entry, resolveDir: root, loader: "js" }, outfile })
      const seen = JSON.parse(execFileSync(process.execPath, [outfile], { encoding: "utf8" })) as unknown
      expect(seen).toEqual({
        atStart: [],
        server: "function",
        afterSsh2: ["ssh2"],
        afterWs: ["ssh2", "ws"],
        open: 1,
        constructs: true,
        instances: [
          ["function", true],
          ["function", true]
        ]
      })
    } finally {
      rmSync(outfile, { force: true })
    }
  })
})
