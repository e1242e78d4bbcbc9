import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { type Manifest, outdated, root } from "../../server/scripts/bundle.mjs"
import { barrelExports, importModules } from "../scripts/effectModules.mjs"
import { buildBundle } from "./support/Cli.ts"

const exportsOf = (specifier: string) => barrelExports(root, specifier)

describe("the CLI bundle", () => {
  it("imports Effect's modules instead of its barrels: namespaces, plain exports and aliases; types dropped", () => {
    const source = [
      'import { Effect, Schema as S, type Layer, pipe } from "effect"',
      'import {\n  HttpClient,\n  type HttpBody\n} from "effect/http"',
      'import { Command } from "effect/cli"',
      'import { Base64Url } from "effect/encoding"'
    ].join("\n")
    expect(importModules(source, exportsOf).split("\n")).toEqual([
      'import * as Effect from "effect/Effect"; import * as S from "effect/Schema"; import { pipe as pipe } from "effect/Function"',
      'import * as HttpClient from "effect/http/HttpClient"',
      'import * as Command from "effect/cli/Command"',
      'import * as Base64Url from "effect/encoding/Base64Url"'
    ])
  })

  it("imports @hostplane/core's areas instead of its index, which would initialize every area", () => {
    const source = [
      'import { Errors, type Orgs, Projects as P } from "@hostplane/core"',
      'import { Errors, servicesWith } from "@hostplane/core"'
    ].join("\n")
    expect(importModules(source, exportsOf).split("\n")).toEqual([
      'import * as Errors from "@hostplane/core/errors/index"; import * as P from "@hostplane/core/projects/index"',
      'import { Errors, servicesWith } from "@hostplane/core"'
    ])
  })

  it("leaves an import as written when the barrel does not re-export a name, or the specifier is no barrel", () => {
    const source = [
      'import { Effect, NotAnEffectModule } from "effect"',
      'import { Simplify } from "effect/Types"',
      'import { Effect as E } from "not-effect"'
    ].join("\n")
    expect(importModules(source, exportsOf)).toBe(source)
  })

  it("is current after buildBundle: its manifest lists the CLI's sources, none newer than the build", async () => {
    await buildBundle()
    const manifest = JSON.parse(
      Fs.readFileSync(Path.join(import.meta.dirname, "../dist/hostplane.cjs.json"), "utf8")
    ) as Manifest
    expect(manifest.sources).toEqual(
      expect.arrayContaining([
        "packages/cli/src/bin/main.ts",
        "packages/client/src/ClientOf.ts",
        "packages/cli/src/ApiClient.ts",
        "packages/node/worker/router.js",
        "packages/cli/scripts/effectModules.mjs"
      ])
    )
    expect(manifest.sources.some((source) => source.includes("node_modules/effect"))).toBe(false)
    expect(outdated(manifest)).toBe(false)
  })
})
