#!/usr/bin/env node
// In a checkout of the repository the CLI runs from its TypeScript sources (Node 22 type stripping, with the
// workspace's `@hostplane/source` condition), so `npx hostplane` works right after `npm ci`; an installed package
// (under node_modules, where Node strips no types) runs the built dist/.
import { realpathSync } from "node:fs"
import * as Module from "node:module"
import { fileURLToPath } from "node:url"

const installed = realpathSync(fileURLToPath(import.meta.url))
  .split(/[\\/]/)
  .includes("node_modules")
if (installed || typeof Module.registerHooks !== "function") {
  await import("../dist/bin/main.js")
} else {
  Module.registerHooks({
    resolve: (specifier, context, next) =>
      next(specifier, { ...context, conditions: [...context.conditions, "@hostplane/source"] })
  })
  await import("../src/bin/main.ts")
}
