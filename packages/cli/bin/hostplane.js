#!/usr/bin/env node
// The CLI is one bundled file with its dependencies (scripts/bundle.mjs), built by `npm ci` in a checkout (the root `prepare`)
// and shipped by `npm pack`: it runs on any Node 20 or newer, with nothing else to resolve. `--version` is answered
// here, before the bundle is compiled.
import { readFileSync } from "node:fs"

const args = process.argv.slice(2)
if (args.length === 1 && args[0] === "--version") {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  process.stdout.write(`hostplane v${version}\n`)
} else {
  // Node 22.1 and newer keep V8's compiled code of the bundle between runs (about a third of a command's start-up).
  ;(await import("node:module")).enableCompileCache?.()
  await import("../dist/hostplane.js")
}
