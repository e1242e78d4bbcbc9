// Builds dist/hostplane.cjs: the whole CLI with every dependency in one CommonJS file for Node 20 or newer, run by
// bin/hostplane.js. CommonJS because the bin compiles it as a classic script with a V8 code cache (`vm.Script`
// `cachedData`), which ES modules cannot take on Node 20. It is what `npm ci` leaves in a checkout (the root `prepare`) and what `npm pack` ships, so the CLI never
// needs the workspace's TypeScript sources, a type-stripping Node or packages that are not on the public registry.
// Plain JavaScript: it runs under whichever Node npm finds first, the machine's own included.
import { build } from "esbuild"
import { copyFileSync, mkdirSync, readdirSync, renameSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { effectModules } from "./effectModules.mjs"

/** Workspace packages (@hostplane/client and the API definition it is built from) resolve to their TypeScript sources. */
const conditions = ["@hostplane/source"]

const root = fileURLToPath(new URL("..", import.meta.url))
const repoRoot = Path.join(root, "../..")
const output = `${root}dist/hostplane.cjs`
const temporary = `${output}.${process.pid}.tmp`

// Before the build: a source edited while it runs leaves the bundle stale.
const builtAt = Date.now()
const result = await build({
  absWorkingDir: root,
  entryPoints: ["src/bin/main.ts"],
  // Written beside its place and renamed over it, so a CLI starting meanwhile (a test file running in parallel)
  // reads the old bundle or the new one, never half of one.
  outfile: temporary,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  conditions,
  // Sources that find files beside themselves (the runtime's worker/ sources, workerd's package) use
  // `import.meta.url`, which a CommonJS file lacks: it is this file's URL.
  define: { "import.meta.url": "importMetaUrl" },
  inject: ["scripts/import-meta-url.js"],
  plugins: [effectModules(repoRoot)],
  legalComments: "none",
  minify: true,
  treeShaking: true,
  metafile: true,
  logLevel: "warning"
})
renameSync(temporary, output)

// `hostplane dev` runs the node's runtime from the bundle, which reads the router's and the tenant entry's sources
// and its bindings' modules beside it (`../worker/` from dist/): they ship with the CLI as files, since workerd loads
// them as they are.
mkdirSync(`${root}worker/bindings`, { recursive: true })
const sources = [
  "router.js",
  "entry.js",
  ...readdirSync(`${root}../node/worker/bindings`).map((name) => `bindings/${name}`)
]
for (const name of sources) {
  const copy = `${root}worker/${name}.${process.pid}.tmp`
  copyFileSync(`${root}../node/worker/${name}`, copy)
  renameSync(copy, `${root}worker/${name}`)
}

// The bundle's manifest, as the server's bundles have (packages/server/scripts/bundle.mjs): the files it was built
// from, relative to the repository's root, and when the build started. The CLI's tests build again only when one of
// them is newer (test/support/Cli.ts).
const manifest = {
  builtAt,
  sources: [
    ...Object.keys(result.metafile.inputs)
      .filter((input) => !input.includes("node_modules/"))
      .map((input) => Path.relative(repoRoot, Path.join(root, input))),
    ...sources.map((name) => `packages/node/worker/${name}`),
    "packages/cli/scripts/bundle.mjs",
    "packages/cli/scripts/effectModules.mjs",
    "node_modules/.package-lock.json"
  ]
}
writeFileSync(`${output}.json.${process.pid}.tmp`, JSON.stringify(manifest))
renameSync(`${output}.json.${process.pid}.tmp`, `${output}.json`)
