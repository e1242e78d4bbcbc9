import { fileURLToPath } from "node:url"
import { defineConfig } from "vite"

const here = fileURLToPath(new URL(".", import.meta.url))

// The console is served by the API listener: index.html at every console URL, hashed files under /console/.
export default defineConfig({
  root: here,
  base: "/console/",
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
