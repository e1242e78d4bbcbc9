import { PaymentGatewayPolar } from "@hostplane/adapters-providers"
import { Ai, type Kernel, Orgs } from "@hostplane/core"
import { type FakePolar, startFakePolar } from "@hostplane/testkit"
import { Effect, Option, Redacted } from "effect"
import { afterAll, beforeAll } from "vitest"
import type { TestServer } from "./TestServer.ts"

export const publicUrl = "https://console.example.test/app"
export const returnTo = `${publicUrl}/billing/done`
export const proProduct = "prod_pro_test"
export const creditProduct = "prod_credit_test"
export const topupProduct = "prod_topup_test"

/** A loopback Polar started before the suite's server, and the settings pointing the server at it. */
export const withPolar = (options: { readonly sandbox?: boolean; readonly secret?: boolean } = {}) => {
  const holder = {} as { polar: FakePolar }
  const webhookSecret = `whsec_${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`
  beforeAll(async () => {
    holder.polar = await startFakePolar({
      webhookSecret,
      products: {
        [proProduct]: { recurring: true, price: "fixed" },
        [creditProduct]: { recurring: false, price: "custom" },
        [topupProduct]: { recurring: false, price: "fixed" }
      }
    })
  })
  afterAll(() => holder.polar?.close())
  const settings = {
    settings: { publicUrl },
    billing: options.secret === false ? {} : { webhookSecret: Option.some(Redacted.make(webhookSecret)) }
  }
  const gateway = () =>
    PaymentGatewayPolar.layer({
      url: options.sandbox === true ? `${holder.polar.url}/sandbox` : holder.polar.url,
      token: Redacted.make(holder.polar.token),
      proProduct,
      creditProduct,
      topupProduct,
      timeout: "2 seconds"
    })
  return { holder, settings, gateway }
}

export const orgIdOf = (server: TestServer, slug: string) =>
  server.run(
    Effect.gen(function* () {
      const org = yield* (yield* Orgs.OrgStore).findBySlug(slug)
      return Option.getOrThrow(org).id
    })
  )

export const creditOf = (server: TestServer, orgId: Kernel.OrgId) =>
  server.run(
    Effect.gen(function* () {
      const store = yield* Ai.CreditStore
      return { credit: yield* store.find(orgId), ledger: yield* store.ledger(orgId, 200, undefined) }
    })
  )
