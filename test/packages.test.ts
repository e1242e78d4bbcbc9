import { execFile } from "node:child_process"
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { promisify } from "node:util"
import { beforeAll, describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "..")
const run = promisify(execFile)
/** The npm that runs this test (`npm test`), else the one on PATH. */
const npm = (args: ReadonlyArray<string>) => {
  const cli = process.env["npm_execpath"]
  return cli?.endsWith(".js")
    ? run(process.execPath, [cli, ...args], { cwd: root, maxBuffer: 64 * 1024 * 1024 })
    : run("npm", args, { cwd: root, maxBuffer: 64 * 1024 * 1024 })
}

interface Manifest {
  readonly name: string
  readonly description?: string
  readonly license?: string
  readonly types?: string
  readonly bin?: Record<string, string>
  readonly exports?: Record<string, string | Record<string, string>>
  readonly files?: ReadonlyArray<string>
  readonly dependencies?: Record<string, string>
  readonly peerDependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
}

const dirs = readdirSync(join(root, "packages")).filter((dir) =>
  existsSync(join(root, "packages", dir, "package.json"))
)
const manifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")) as Manifest
/**
 * A bin published as one self-contained bundle with no dependencies (the CLI, decisions.md part 17): it has no typed
 * exports and no copy of effect to share; `packages/cli/test/install.test.ts` checks its tarball instead.
 */
const bundled = (dir: string) => manifest(dir).bin !== undefined && manifest(dir).dependencies === undefined
const modular = dirs.filter((dir) => !bundled(dir))
/** Packages a host builds on; `server` is an application and brings its own copy of everything. */
const libraries = dirs.filter((dir) => manifest(dir).bin === undefined)
/** What must exist once in a host's tree: a second copy breaks `instanceof`, schema classes and service identity. */
const shared = (name: string) => name === "effect" || name.startsWith("@effect/") || name === "@hostplane/core"

/** Bare package names the package's own sources import. */
const importsOf = (dir: string): ReadonlySet<string> => {
  const names = new Set<string>()
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith(".ts")) {
        for (const [, spec] of readFileSync(path, "utf8").matchAll(/(?:from|import)\s+"([^".][^"]*)"/g)) {
          if (spec!.startsWith("node:")) continue
          const parts = spec!.split("/")
          names.add(spec!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!)
        }
      }
    }
  }
  walk(join(root, "packages", dir, "src"))
  return names
}

describe("package metadata", () => {
  it.each(modular)("%s has a description, typed exports, a README and the root's LICENSE", (dir) => {
    const pkg = manifest(dir)
    expect(pkg.name).toBe(`@hostplane/${dir}`)
    expect(pkg.description?.length).toBeGreaterThan(20)
    expect(pkg.license).toBe("MIT")
    expect(pkg.types).toBe("./dist/index.d.ts")
    for (const [subpath, conditions] of Object.entries(pkg.exports ?? {})) {
      if (typeof conditions === "string") continue
      expect(conditions["types"], `exports["${subpath}"].types`).toMatch(/^\.\/dist\/.*\.d\.ts$/)
      expect(conditions["default"], `exports["${subpath}"].default`).toMatch(/^\.\/dist\/.*\.js$/)
    }
    expect(pkg.exports?.["."]).toBeDefined()
    expect(readFileSync(join(root, "packages", dir, "README.md"), "utf8")).toMatch(new RegExp(`^# @hostplane/${dir}\n`))
    expect(readFileSync(join(root, "packages", dir, "LICENSE"), "utf8")).toBe(
      readFileSync(join(root, "LICENSE"), "utf8")
    )
    expect(readFileSync(join(root, "LICENSE"), "utf8")).toMatch(/^MIT License\n/)
  })

  it.each(libraries)(
    "%s takes effect, @effect/* and @hostplane/core as peer dependencies, never as its own dependency",
    (dir) => {
      const pkg = manifest(dir)
      expect(Object.keys(pkg.dependencies ?? {}).filter(shared)).toEqual([])
      for (const name of importsOf(dir)) {
        if (name === pkg.name) continue
        if (shared(name)) {
          expect(pkg.peerDependencies?.[name], `${name} in peerDependencies`).toBeDefined()
          expect(pkg.devDependencies?.[name], `${name} in devDependencies`).toBe(pkg.peerDependencies?.[name])
        } else {
          expect(pkg.dependencies?.[name] ?? pkg.peerDependencies?.[name], `${name} declared`).toBeDefined()
        }
      }
    }
  )

  it("the server declares everything it imports", () => {
    const pkg = manifest("server")
    for (const name of importsOf("server")) {
      expect(pkg.dependencies?.[name], `${name} in dependencies`).toBeDefined()
    }
  })

  it("@hostplane/http imports no adapter, and depends on none", () => {
    const pkg = manifest("http")
    expect([...importsOf("http")].filter((name) => name.startsWith("@hostplane/adapters-"))).toEqual([])
    const runtime = { ...pkg.dependencies, ...pkg.peerDependencies }
    expect(Object.keys(runtime).filter((name) => name.startsWith("@hostplane/adapters-"))).toEqual([])
  })
})

describe("one copy of effect and core in the workspace", () => {
  it.each(modular)("%s resolves the root's effect, @effect/* and @hostplane/core, not a nested copy", (dir) => {
    const require = createRequire(join(root, "packages", dir, "package.json"))
    const rootRequire = createRequire(join(root, "package.json"))
    const pkg = manifest(dir)
    const names = [...Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies })].filter(shared)
    expect(names).toContain("effect")
    for (const name of names) {
      const own = realpathSync(require.resolve(`${name}/package.json`))
      expect(own, name).toBe(realpathSync(rootRequire.resolve(`${name}/package.json`)))
    }
  })

  it("npm ls finds each of them once, with every peer range satisfied", async () => {
    const names = ["effect", "@effect/platform-node", "@effect/sql-pg", "@effect/vitest", "@hostplane/core"]
    const { stdout } = await npm(["ls", "--all", "--json", ...names])
    const versions = new Map<string, Set<string>>()
    const problems: Array<string> = []
    const walk = (node: {
      dependencies?: Record<string, { version?: string; invalid?: string; missing?: boolean }>
    }): void => {
      for (const [name, child] of Object.entries(node.dependencies ?? {})) {
        if (child.invalid !== undefined || child.missing === true)
          problems.push(`${name}: ${child.invalid ?? "missing"}`)
        if (names.includes(name)) versions.set(name, (versions.get(name) ?? new Set()).add(child.version ?? "?"))
        walk(child as Parameters<typeof walk>[0])
      }
    }
    walk(JSON.parse(stdout))
    expect(problems).toEqual([])
    for (const name of names) expect([...(versions.get(name) ?? [])], name).toHaveLength(1)
  }, 60_000)
})

describe("what npm pack publishes", () => {
  let packs: ReadonlyArray<{ readonly name: string; readonly files: ReadonlyArray<{ readonly path: string }> }>
  beforeAll(async () => {
    // What each package's `prepack` does (tsc -b), in one compiler run for all of them, so dist is what a publish ships.
    await run(
      process.execPath,
      [join(root, "node_modules/typescript/bin/tsc"), "-b", ...dirs.map((dir) => `packages/${dir}`)],
      {
        cwd: root
      }
    )
    const workspaces = dirs.flatMap((dir) => ["-w", `packages/${dir}`])
    const { stdout } = await npm(["pack", "--dry-run", "--json", "--ignore-scripts", ...workspaces])
    packs = JSON.parse(stdout)
  }, 240_000)

  it.each(modular)("@hostplane/%s ships dist, README and LICENSE, and no .tsbuildinfo or test", (dir) => {
    const pkg = manifest(dir)
    const pack = packs.find((entry) => entry.name === pkg.name)!
    const paths = pack.files.map((file) => file.path)
    expect(paths.filter((path) => /\.tsbuildinfo$|(^|\/)test\/|\.test\.ts$/.test(path))).toEqual([])
    expect(paths).toEqual(expect.arrayContaining(["package.json", "README.md", "LICENSE"]))
    const main = pkg.exports!["."] as Record<string, string>
    const targets = [pkg.types!, main["types"]!, main["default"]!, ...Object.values(pkg.bin ?? {})]
    for (const target of targets) expect(paths, target).toContain(target.replace(/^\.\//, ""))
  })
})
