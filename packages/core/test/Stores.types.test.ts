import type { Context, Layer } from "effect"
import { describe, expectTypeOf, it } from "vitest"
import type {
  Billing,
  Database,
  Email,
  EndUser,
  ConfigOverrides,
  Configs,
  Identity,
  Kernel,
  Logs,
  Mail,
  Node,
  Ports,
  providersOff,
  services,
  Storage,
  Stores,
  Tls
} from "../src/index.ts"
import type { areas } from "../src/areas.ts"

type Services = Layer.Success<typeof services>

// Checked by the compiler (`tsc -b` type-checks the tests): each line is an error the day the type is `any` again.
describe("the folded registry types are precise", () => {
  it("Stores names every store port, and is not any", () => {
    expectTypeOf<Stores>().not.toBeAny()
    expectTypeOf<Identity.UserStore>().toExtend<Stores>()
    expectTypeOf<Identity.AuthCache>().toExtend<Stores>()
    expectTypeOf<Kernel.AuditLog>().toExtend<Stores>()
    expectTypeOf<Mail.MailOutbox>().toExtend<Stores>()
    // A service is not a store.
    expectTypeOf<Identity.Identity>().not.toExtend<Stores>()
  })

  it("each area's stores are its own ports, never the widened Context.Key<any, any>", () => {
    type StoresOfEach = {
      [K in keyof typeof areas]: (typeof areas)[K] extends { readonly stores: ReadonlyArray<infer S> }
        ? Context.Service.Identifier<S>
        : never
    }
    expectTypeOf<StoresOfEach[number]>().not.toBeAny()
  })

  it("Ports and Services are not any, and a port left out is missing from what a layer provides", () => {
    expectTypeOf<Ports>().not.toBeAny()
    expectTypeOf<Services>().not.toBeAny()
    expectTypeOf<Identity.IdentityProvider>().toExtend<Ports>()
    expectTypeOf<Identity.Identity>().toExtend<Services>()
  })

  it("Configs and ConfigOverrides, folded from the areas' settings, name each area's config and key", () => {
    expectTypeOf<Configs>().not.toBeAny()
    expectTypeOf<Identity.IdentityConfig>().toExtend<Configs>()
    expectTypeOf<Logs.LogsConfig>().toExtend<Configs>()
    expectTypeOf<Node.NodeConfig>().toExtend<Configs>()
    expectTypeOf<Identity.Identity>().not.toExtend<Configs>()
    expectTypeOf<ConfigOverrides>().toHaveProperty("identity")
    expectTypeOf<ConfigOverrides>().toHaveProperty("invites")
    expectTypeOf<ConfigOverrides>().toHaveProperty("logs")
    expectTypeOf<Required<ConfigOverrides>["mail"]>().not.toBeAny()
  })

  it("providersOff, folded from the areas' ports, provides each provider port in its off form", () => {
    type Off = Layer.Success<typeof providersOff>
    expectTypeOf<Off>().not.toBeAny()
    expectTypeOf<Billing.PaymentGateway>().toExtend<Off>()
    expectTypeOf<Mail.MailTransport>().toExtend<Off>()
    expectTypeOf<Tls.AcmeClient>().toExtend<Off>()
    // Sign-in too: without a provider it answers 400 and no page offers it.
    expectTypeOf<Identity.IdentityProvider>().toExtend<Off>()
  })

  it("the node state's bindings are folded from the areas' node bindings, each typed by its schema", () => {
    type Bindings = Node.NodeProject["bindings"]
    expectTypeOf<Bindings>().not.toBeAny()
    expectTypeOf<Bindings>().toEqualTypeOf<{
      readonly db: Database.DatabaseConnect | null
      readonly storage: Storage.StorageBinding | null
      readonly email: Email.EmailBinding | null
      readonly auth: EndUser.AuthBinding | null
      readonly ai: { readonly key: string } | null
    }>()
  })
})
