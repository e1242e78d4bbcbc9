// Builds dist/client.js, what `import "@hostplane/client"` loads outside the workspace's TypeScript sources: the client
// with the API definition it is built from in one ES module, its peer effect left as imports
// so an application shares its own copies. `npm ci` in a checkout runs it (the root `prepare`), so plain Node 20 or newer can
// import the client right away; the type declarations come from `tsc -b` as for every package.
import { build } from "esbuild"
import { fileURLToPath } from "node:url"

await build({
  absWorkingDir: fileURLToPath(new URL("..", import.meta.url)),
  entryPoints: ["src/index.ts"],
  outfile: "dist/client.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // Workspace packages resolve to their TypeScript sources.
  conditions: ["@hostplane/source"],
  external: ["effect", "effect/*"],
  banner: {
    js: 'import { createRequire as __hostplaneRequire } from "node:module";const require = __hostplaneRequire(import.meta.url);'
  },
  legalComments: "none",
  logLevel: "warning"
})
