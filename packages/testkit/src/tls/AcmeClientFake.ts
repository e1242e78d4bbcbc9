import { Tls } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { generateKeyPairSync } from "node:crypto"
import type { TestAuthority } from "./TestCertificates.ts"

/** What the fake CA does with an order for a name. */
export type FakeAcmeAnswer = { readonly issue: true } | { readonly refuse: string } | { readonly unreachable: true }

/** A CA in memory for the certificate jobs: orders counted per name, answers chosen per name, real certificates. */
export interface AcmeClientFake {
  readonly layer: Layer.Layer<Tls.AcmeClient>
  /** Orders placed per name (a resumed order is not a new one). */
  readonly orders: Map<string, number>
  /** Key authorizations published while an order was validated, by token. */
  readonly published: Array<string>
}

export const acmeClientFake = (
  authority: TestAuthority,
  answer: (name: string) => FakeAcmeAnswer = () => ({ issue: true })
): AcmeClientFake => {
  const orders = new Map<string, number>()
  // One real certificate for every order: what the API shows is its expiry, not which names it carries.
  const leaf = authority.issue(["issued.fake.test"], 90)
  const published: Array<string> = []
  const service = Tls.AcmeClient.of({
    newKey: Effect.sync(() =>
      generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "pkcs8", format: "pem" }).toString()
    ),
    order: (input) =>
      Effect.gen(function* () {
        const decided = answer(input.name)
        if ("unreachable" in decided) {
          return yield* new Tls.AcmeFailure({
            kind: "unreachable",
            message: "the ACME server could not be reached: connect ECONNREFUSED"
          })
        }
        if (input.account.url === null) yield* input.onAccount("https://ca.fake/acct/1")
        if (input.orderUrl === null) {
          orders.set(input.name, (orders.get(input.name) ?? 0) + 1)
          yield* input.onOrder(`https://ca.fake/order/${input.name}/${orders.get(input.name)}`)
        }
        if ("refuse" in decided) return yield* new Tls.AcmeFailure({ kind: "refused", message: decided.refuse })
        const token = `tok-${input.name}`
        yield* input.publish(token, `${token}.thumbprint`)
        published.push(token)
        yield* input.unpublish(token)
        return { chain: leaf.chain, expiresAt: new Date(Date.now() + 90 * 86_400_000).toISOString() }
      })
  })
  return { layer: Layer.succeed(Tls.AcmeClient)(service), orders, published }
}
