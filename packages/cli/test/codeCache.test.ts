import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { buildBundle, hostplane, type Run } from "./support/Cli.ts"
import { tempDirs } from "./support/TempDirs.ts"

const packageDir = Path.join(import.meta.dirname, "..")
const manifest = JSON.parse(Fs.readFileSync(Path.join(packageDir, "package.json"), "utf8"))

/** The machine's own `node` (PATH without npm's node_modules/.bin, where the pinned Node 22 sits), if there is one. */
const systemNode = (): string | undefined => {
  const dirs = (process.env["PATH"] ?? "").split(Path.delimiter).filter((dir) => !dir.includes("node_modules"))
  return dirs.map((dir) => Path.join(dir, "node")).find((file) => Fs.existsSync(file))
}

/** `--version --json` goes through the whole bundle (the bin's fast path answers only a bare `--version`). */
const versionRun = (cacheDir: string, options: { node?: string; bin?: string } = {}): Promise<Run> =>
  hostplane(["--version", "--json"], { env: { HOSTPLANE_CACHE_DIR: cacheDir }, ...options })

const expectVersion = (run: Run) => {
  expect(run.stderr).toBe("")
  expect(run.code).toBe(0)
  expect(run.stdout).toContain(`v${manifest.version}`)
}

const cacheFiles = (dir: string) =>
  Fs.existsSync(dir) ? Fs.readdirSync(dir).filter((name) => name.endsWith(".v8")) : []

/** A cache file's own digest matches its payload (what the bin checks before V8 sees it). */
const wellFormed = (file: string) => {
  const data = Fs.readFileSync(file)
  return createHash("sha256").update(data.subarray(32)).digest().equals(data.subarray(0, 32))
}

const tempDir = tempDirs()

// The bin compiles the bundle with V8's code cache under the user's cache dir; any cache trouble means a plain compile.
// Each test has its own cache dir (and bundle copy), so they run at once: one's process starts overlap another's.
describe.concurrent("the bundle's code cache", { timeout: 120_000 }, () => {
  beforeAll(() => buildBundle(), 120_000)

  it("is written on the first run, then read and kept as it is", async () => {
    const dir = tempDir("hostplane-code-cache-")
    expectVersion(await versionRun(dir))
    const [name] = cacheFiles(dir)
    expect(name).toMatch(/^[0-9a-f]{40}\.v8$/)
    const file = Path.join(dir, name!)
    expect(wellFormed(file)).toBe(true)
    const written = Fs.statSync(file)
    expectVersion(await versionRun(dir))
    // Rewritten only when missing or rejected by V8: an untouched file means V8 took it.
    const after = Fs.statSync(file)
    expect([after.ino, after.mtimeMs, after.size]).toEqual([written.ino, written.mtimeMs, written.size])
    expect(cacheFiles(dir)).toEqual([name])
  })

  it("a corrupt, truncated or foreign cache file is ignored and replaced by a good one", async () => {
    const dir = tempDir("hostplane-code-cache-bad-")
    expectVersion(await versionRun(dir))
    const file = Path.join(dir, cacheFiles(dir)[0]!)
    const good = Fs.readFileSync(file)
    const garbage = Buffer.from("not V8 code cache at all ".repeat(64))
    const flipped = Buffer.from(good)
    flipped[flipped.length >> 1] ^= 0xff
    for (const bad of [
      flipped,
      good.subarray(0, good.length >> 1),
      Buffer.alloc(0),
      // Its own digest is right, so V8 itself sees it and rejects it (its header checks fail).
      Buffer.concat([createHash("sha256").update(garbage).digest(), garbage])
      // Not here: a real cache with a byte flipped and its digest fixed up. Release builds of V8 do not checksum a
      // code cache, so such a forged file can crash the CLI (seen: SIGSEGV); the bin's digest is what stands
      // against a damaged one, and its comment says so.
    ]) {
      Fs.writeFileSync(file, bad)
      expectVersion(await versionRun(dir))
      expect(wellFormed(file)).toBe(true)
      expect(Fs.readFileSync(file).length).toBeGreaterThan(1000)
    }
  })

  it("a changed bundle does not use the old bundle's cache", async () => {
    const dir = tempDir("hostplane-code-cache-stale-")
    const copy = tempDir("hostplane-code-cache-copy-")
    for (const path of ["package.json", "bin/hostplane.js", "dist/hostplane.cjs"]) {
      Fs.mkdirSync(Path.dirname(Path.join(copy, path)), { recursive: true })
      Fs.copyFileSync(Path.join(packageDir, path), Path.join(copy, path))
    }
    const bin = Path.join(copy, "bin/hostplane.js")
    expectVersion(await versionRun(dir, { bin }))
    const first = cacheFiles(dir)
    expect(first).toHaveLength(1)
    // The same length as before (V8's own check looks at the source's length), different code.
    const bundle = Path.join(copy, "dist/hostplane.cjs")
    const source = Fs.readFileSync(bundle, "utf8")
    const changed = source.replace(
      `"${manifest.version}"`,
      `"${manifest.version.replace(/\d$/, (d: string) => String((Number(d) + 1) % 10))}"`
    )
    expect(changed).not.toBe(source)
    expect(changed.length).toBe(source.length)
    Fs.writeFileSync(bundle, changed)
    const run = await versionRun(dir, { bin })
    expect(run).toMatchObject({ code: 0, stderr: "" })
    expect(run.stdout).not.toContain(`v${manifest.version}`)
    expect(cacheFiles(dir)).toHaveLength(2)
  })

  it("a cache dir that cannot be created or written is no error", async () => {
    const parent = tempDir("hostplane-code-cache-blocked-")
    const blocker = Path.join(parent, "a-file")
    Fs.writeFileSync(blocker, "")
    expectVersion(await versionRun(Path.join(blocker, "cache")))
    expectVersion(await versionRun(blocker))
    expect(Fs.readFileSync(blocker, "utf8")).toBe("")
  })

  it("each Node keeps its own cache: the machine's Node 20 beside the pinned Node", async () => {
    const node = systemNode()
    if (node === undefined || node === process.execPath) return
    const dir = tempDir("hostplane-code-cache-nodes-")
    expectVersion(await versionRun(dir, { node }))
    expectVersion(await versionRun(dir))
    expect(cacheFiles(dir)).toHaveLength(2)
    expectVersion(await versionRun(dir, { node }))
    expectVersion(await versionRun(dir))
    expect(cacheFiles(dir)).toHaveLength(2)
  })
})
