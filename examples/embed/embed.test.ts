import { ArtifactStoreDisk, BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import { configLayer, Identity } from "@hostplane/core"
import { HostAuthenticator } from "@hostplane/http"
import { layerMemory } from "@hostplane/testkit"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import { Layer } from "effect"
import type { AddressInfo } from "node:net"
import { expect, it } from "vitest"
import { startHost } from "./host.ts"

it("a host server mounts hostplane's /v1 beside its own routes", async () => {
  const host = await startHost(
    Layer.mergeAll(
      layerMemory,
      configLayer({ identity: { devAuth: true } }),
      Identity.IdentityProvider.off,
      HostAuthenticator.off,
      dnsNone,
      SealerAesGcm.layerEphemeral,
      PasswordHasherScrypt.layer,
      BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))
    )
  )
  try {
    const base = `http://127.0.0.1:${(host.server.address() as AddressInfo).port}`
    expect(await (await fetch(`${base}/`)).text()).toBe("the host's own page\n")
    const login = await fetch(`${base}/v1/auth/dev/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subject: "embedded" })
    })
    const { token } = (await login.json()) as { token: string }
    const me = await fetch(`${base}/v1/me`, { headers: { authorization: `Bearer ${token}` } })
    expect(me.status).toBe(200)
    expect(((await me.json()) as { user: { subject: string } }).user.subject).toBe("embedded")
  } finally {
    await host.close()
  }
})
