import { fileURLToPath } from "node:url"
import { defineConfig } from "vite"

const here = fileURLToPath(new URL(".", import.meta.url))

// The console is served by the API listener: index.html at every console URL, hashed files under /console/.
export default defineConfig({
  root: here,
  base: "/console/",
  // Chunks load one another relative to themselves, so the console works under a host's prefix too
  // (`/platform/console/...`): the server names the prefix in index.html, the only file that names `/console/`.
  experimental: { renderBuiltUrl: (_, { hostType }) => (hostType === "html" ? undefined : { relative: true }) },
  logLevel: "warn",
  resolve: { conditions: ["@hostplane/source", "browser", "module", "import", "default"] },
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/app", import.meta.url)),
    emptyOutDir: true,
    manifest: true,
    target: "es2022",
    // The polyfill is an inline script, which the console's CSP (script-src 'self') refuses.
    modulePreload: { polyfill: false },
    reportCompressedSize: false
  }
})
