import { builtinModules } from "node:module"
import { gzipSync } from "node:zlib"
import * as esbuild from "esbuild"
import { describe, expect, it } from "vitest"

const nodeBuiltins = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)])

describe("@hostplane/client in a browser", () => {
  it("bundles for platform browser with no Node built-in and no server package", async () => {
    const imported: Array<string> = []
    const result = await esbuild.build({
      entryPoints: [new URL("../src/index.ts", import.meta.url).pathname],
      bundle: true,
      platform: "browser",
      format: "esm",
      minify: true,
      write: false,
      metafile: true,
      logLevel: "silent",
      conditions: ["@hostplane/source"],
      plugins: [
        {
          // esbuild refuses a Node built-in for the browser already; this also names the importer in the failure.
          name: "no-node",
          setup(build) {
            build.onResolve({ filter: /.*/ }, (args) => {
              if (nodeBuiltins.has(args.path) || args.path.startsWith("@effect/platform-node")) {
                imported.push(`${args.path} from ${args.importer}`)
              }
              return undefined
            })
          }
        }
      ]
    })
    expect(imported).toEqual([])
    expect(result.errors).toEqual([])
    const inputs = Object.keys(result.metafile.inputs)
    expect(inputs.filter((path) => /packages\/(http|server|adapters-[a-z]+|testkit)\//.test(path))).toEqual([])
    const bundle = result.outputFiles[0]!.contents
    const gzip = gzipSync(bundle).length
    console.info(`@hostplane/client browser bundle: ${bundle.length} bytes minified, ${gzip} bytes gzip`)
    expect(bundle.length).toBeGreaterThan(0)
  })
})
