import { ArtifactStoreDisk, BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import { configLayer, Identity } from "@hostplane/core"
import { layerMemory, portsOff } from "@hostplane/testkit"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import { Layer, Logger } from "effect"
import { describe, expect, it } from "vitest"
import type { Ports } from "../src/App.ts"
import { HostAuthenticator } from "../src/auth/HostAuthenticator.ts"
import { explainMissingPort } from "../src/server/MissingPort.ts"
import { mount } from "../src/server/Mount.ts"

/** Every port but the sealer, on memory stores. */
const withoutSealer = Layer.mergeAll(
  Layer.fresh(layerMemory),
  configLayer({}),
  portsOff,
  HostAuthenticator.off,
  dnsNone,
  PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 }),
  BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))
).pipe(Layer.provide(Logger.layer([])))

describe("a port left out", () => {
  it("is a compile error where the ports are mounted", () => {
    // Checked by the compiler (`tsc -b` type-checks the tests): the line below stops compiling, failing the build,
    // the day `mount` accepts a layer that lacks a port again.
    // @ts-expect-error the sealer is missing
    const mounting = () => mount(withoutSealer)
    expect(typeof mounting).toBe("function")
    // With it, the same layer is accepted.
    const complete = () => mount(Layer.merge(withoutSealer, SealerAesGcm.layerEphemeral))
    expect(typeof complete).toBe("function")
  })

  it("forced past the compiler, fails the build naming the port and the layer that usually provides it", async () => {
    const mounting = mount(withoutSealer as unknown as Layer.Layer<Ports>)
    await expect(mounting).rejects.toThrow(
      /Service not found: @hostplane\/core\/secrets\/Sealer: .*SealerAesGcm\.layerConfig \(@hostplane\/adapters-providers\)/
    )
  })

  it("names the hint of every kind of port: a store, a setting, a provider in its off form, the host's sign-in", () => {
    const explained = (key: string) =>
      String((explainMissingPort(new Error(`Service not found: ${key}`)) as Error).message)
    expect(explained("@hostplane/core/identity/UserStore")).toMatch(/adapters-pg.*layerMemory/)
    expect(explained(Identity.IdentityConfig.key)).toContain("configLayer(...)")
    expect(explained("@hostplane/core/billing/PaymentGateway")).toContain("PaymentGateway.off")
    expect(explained(HostAuthenticator.key)).toContain("HostAuthenticator.off")
    // Anything else is left as it was.
    const other = new Error("Service not found: @someone/else/Thing")
    expect(explainMissingPort(other)).toBe(other)
    const unrelated = new Error("connection refused")
    expect(explainMissingPort(unrelated)).toBe(unrelated)
  })
})
