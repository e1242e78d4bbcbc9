import { layerMemory } from "@hostplane/testkit"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, startTestServer, type TestServer, unique } from "../../http/test/support/TestServer.ts"
import { version } from "../src/Version.ts"
import { buildBundle, hostplane } from "./support/Cli.ts"
import { tempDirs } from "./support/TempDirs.ts"

const tempDir = tempDirs()

const packageDir = Path.join(import.meta.dirname, "..")
const manifest = JSON.parse(Fs.readFileSync(Path.join(packageDir, "package.json"), "utf8"))

/** The machine's own `node` (PATH without npm's node_modules/.bin, where the pinned Node 22 sits), if there is one. */
const systemNode = (): string | undefined => {
  const dirs = (process.env["PATH"] ?? "").split(Path.delimiter).filter((dir) => !dir.includes("node_modules"))
  return dirs.map((dir) => Path.join(dir, "node")).find((file) => Fs.existsSync(file))
}

// npm pack and a global install of the tarball, then commands of the installed copy against a real server.
describe("the CLI as a user installs it", { timeout: 300_000 }, () => {
  let server: TestServer
  let token: string
  const api = client(() => server.url)

  beforeAll(async () => {
    await buildBundle()
    server = await startTestServer(Layer.fresh(layerMemory))
    token = (await api.login(unique("install"))).token
  }, 300_000)
  afterAll(async () => {
    await server?.close()
  })

  it("--version answers the package's version, from the bin's fast path and from the CLI itself", async () => {
    expect(version).toBe(manifest.version)
    const fast = await hostplane(["--version"], { env: {} })
    expect(fast).toEqual({ code: 0, stdout: `hostplane v${manifest.version}\n`, stderr: "" })
    const full = await hostplane(["--version", "--json"], { env: {} })
    expect(full.stdout).toContain(`v${manifest.version}`)
  })

  it("the packed tarball is the bin and one bundle, with no dependency to fetch; installed with npm install -g it runs anywhere", async () => {
    const work = tempDir("hostplane-cli-pack-")
    const npmEnv = {
      ...process.env,
      npm_config_cache: Path.join(work, "npm-cache"),
      npm_config_update_notifier: "false"
    }
    const packed = JSON.parse(
      execFileSync("npm", ["pack", "--json", "--pack-destination", work], { cwd: packageDir, env: npmEnv }).toString()
    )[0]
    expect(packed.files.map((file: { path: string }) => file.path).sort()).toEqual(
      [
        "LICENSE",
        "README.md",
        "bin/hostplane.js",
        "dist/hostplane.cjs",
        "package.json",
        "worker/entry.js",
        "worker/router.js",
        // Each add-on's worker-side module, as the node package lists them.
        ...Fs.readdirSync(Path.join(packageDir, "../node/worker/bindings")).map((name) => `worker/bindings/${name}`)
      ].sort()
    )
    const tarball = Path.join(work, packed.filename)
    const listed = execFileSync("tar", ["-xzOf", tarball, "package/package.json"]).toString()
    const packedManifest = JSON.parse(listed)
    expect(packedManifest.dependencies ?? {}).toEqual({})
    expect(Object.keys(packedManifest.scripts ?? {})).not.toContain("prepare")
    expect(packedManifest.engines).toEqual({ node: ">=20" })

    const prefix = Path.join(work, "global")
    // --offline: nothing may come from a registry.
    execFileSync("npm", ["install", "-g", "--offline", "--prefix", prefix, tarball], { cwd: work, env: npmEnv })
    const installed = Path.join(prefix, "bin", "hostplane")
    const outside = tempDir("hostplane-cli-outside-")
    const env = { HOSTPLANE_URL: server.url, HOSTPLANE_TOKEN: token, HOSTPLANE_CONFIG_DIR: outside }
    const node = systemNode() ?? process.execPath
    const run = (args: ReadonlyArray<string>) => hostplane(args, { env, cwd: outside, node, bin: installed })
    const version = await run(["--version"])
    expect(version.stdout).toBe(`hostplane v${manifest.version}\n`)
    const orgs = await run(["orgs", "list", "--json"])
    expect(orgs.code, orgs.stderr).toBe(0)
    expect(JSON.parse(orgs.stdout).items).toEqual([expect.objectContaining({ personal: true })])
    // `dev` needs workerd, which the tarball does not carry: without it beside the CLI or on PATH, one line.
    const dev = await hostplane(["dev", outside], {
      env: { ...env, PATH: Path.dirname(node) },
      cwd: outside,
      node,
      bin: installed
    })
    expect(dev).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "error dev_failed: hostplane dev needs workerd, the Workers runtime: install it with `npm install -g workerd@1.20261117.1` (or set HOSTPLANE_WORKERD to a workerd binary)\n"
    })
  })

  it("the machine's own Node (20 or newer) runs the bin; a server that does not answer is one line, exit 1", async () => {
    const node = systemNode()
    expect(node, "a node on PATH outside node_modules").toBeDefined()
    const major = Number(execFileSync(node!, ["-p", "process.versions.node.split('.')[0]"]).toString().trim())
    expect(major).toBeGreaterThanOrEqual(20)
    const env = { HOSTPLANE_TOKEN: token, HOSTPLANE_CONFIG_DIR: tempDir("hp-") }
    const ok = await hostplane(["whoami", "--json", "--url", server.url], { env, node: node! })
    expect(ok.code, ok.stderr).toBe(0)
    const down = await hostplane(["projects", "list", "--url", "http://127.0.0.1:9"], { env, node: node! })
    expect(down.code).toBe(1)
    expect(down.stderr).toMatch(/^error unreachable: no answer from http:\/\/127\.0\.0\.1:9\/v1\/\S+\n$/)
    const json = await hostplane(["projects", "list", "--json", "--url", "http://127.0.0.1:9"], { env, node: node! })
    expect(json.code).toBe(1)
    expect(json.stdout).toBe("")
    expect(JSON.parse(json.stderr).error.code).toBe("unreachable")
  })
})
