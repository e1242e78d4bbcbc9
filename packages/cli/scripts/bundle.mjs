// Builds dist/hostplane.cjs: the whole CLI with every dependency in one CommonJS file for Node 20 or newer, run by
// bin/hostplane.js. CommonJS because the bin compiles it as a classic script with a V8 code cache (`vm.Script`
// `cachedData`), which ES modules cannot take on Node 20. It is what `npm ci` leaves in a checkout (the root `prepare`) and what `npm pack` ships, so the CLI never
// needs the workspace's TypeScript sources, a type-stripping Node or packages that are not on the public registry.
// Plain JavaScript: it runs under whichever Node npm finds first, the machine's own included.
import { build } from "esbuild"
import { copyFileSync, mkdirSync, readdirSync, renameSync } from "node:fs"
import { fileURLToPath } from "node:url"

/** Workspace packages (@hostplane/client and the API definition it is built from) resolve to their TypeScript sources. */
const conditions = ["@hostplane/source"]

const root = fileURLToPath(new URL("..", import.meta.url))
const output = `${root}dist/hostplane.cjs`
const temporary = `${output}.${process.pid}.tmp`

await build({
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
  legalComments: "none",
  minify: true,
  treeShaking: true,
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
