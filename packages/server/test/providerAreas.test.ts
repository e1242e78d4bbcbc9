import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import * as Pg from "@hostplane/adapters-pg"
import * as Providers from "@hostplane/adapters-providers"
import { type AnyArea, areas, configLayer, type Deployments, type ProviderPorts, type Tls } from "@hostplane/core"
import { ConfigProvider, Effect, Layer } from "effect"
import type { HostplaneOptions } from "../src/Hostplane.ts"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** The keys a layer provides, read by building it. */
const keysOf = (layer: Layer.Layer<any, any, never>) =>
  Effect.runPromise(Effect.scoped(Effect.map(Layer.build(layer), (context) => [...context.mapUnsafe.keys()].sort())))

const core = new Map((areas as ReadonlyArray<AnyArea>).map((area) => [area.name, area]))

/** Every area's providers as a standalone server folds them: adapters-providers' list, then adapters-pg's. */
const declared = [
  ...Providers.areas.map((area) => ({ name: area.name, layer: area.fromEnv as Layer.Layer<any, any, any> })),
  ...Pg.areas.flatMap((area) => (area.providers === undefined ? [] : [{ name: area.name, layer: area.providers }]))
]

describe("provider adapters are declared by their areas", () => {
  it("the standalone server's folds and its runtime ports cover every provider port of core's areas", () => {
    type Folded =
      | Layer.Success<typeof Providers.providersFromEnv>
      | Layer.Success<typeof Pg.providersFromEnv>
      // What the server builds from its own listeners: the worker runtime's deploy check, the edge's certificates.
      | Deployments.WorkerCheck
      | Tls.TlsConfig
      | Tls.AcmeClient
    expectTypeOf<Folded>().not.toBeAny()
    expectTypeOf<ProviderPorts>().toExtend<Folded>()
    expectTypeOf<Layer.Success<typeof Providers.providersFromEnv>>().toExtend<ProviderPorts>()
    expectTypeOf<Layer.Success<typeof Pg.providersFromEnv>>().toExtend<ProviderPorts>()
    // A library host may take the standalone server's providers as they are.
    expectTypeOf(Layer.merge(Providers.providersFromEnv, Pg.providersFromEnv)).toExtend<
      NonNullable<NonNullable<HostplaneOptions["adapters"]>["providers"]>
    >()
  })

  it("each area's providers build from empty settings and provide exactly ports its core area declares", async () => {
    expect(declared.length).toBeGreaterThan(8)
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-provider-areas-"))
    try {
      const env = ConfigProvider.layer(ConfigProvider.fromUnknown({ SERVICE_DATA_DIR: dataDir }))
      const settings = configLayer({})
      for (const { name, layer } of declared) {
        const area = core.get(name)
        expect(area, `${name} is no core area`).toBeDefined()
        const off = await keysOf(Layer.mergeAll(...((area!.ports ?? []) as [Layer.Layer<any>])))
        const built = await keysOf(
          layer.pipe(Layer.provide(Layer.merge(settings, env))) as Layer.Layer<any, any, never>
        )
        expect(built.length, name).toBeGreaterThan(0)
        for (const key of built) expect(off, `${name} provides ${key}`).toContain(key)
      }
    } finally {
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
