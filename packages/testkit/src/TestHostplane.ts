import { BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import {
  type Billing,
  type ConfigOverrides,
  type Configs,
  configLayer,
  type Domains,
  Identity,
  jobHandlers,
  Jobs,
  Kernel,
  Mail,
  Orgs,
  Projects,
  services
} from "@hostplane/core"
import { HostAuthenticator, mount, type Mounted, type Ports } from "@hostplane/http"
import { Context, Effect, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as ArtifactStoreMemory from "./deployments/ArtifactStoreMemory.ts"
import { dnsNone } from "./dns/DnsNone.ts"
import { layerMemory } from "./memory/layerMemory.ts"
import { portsOff } from "./memory/portsOff.ts"

/** The fakes a host's tests may swap in, each one option; everything else is memory or off. */
export interface TestHostplaneOptions {
  /** Every area's settings; dev login is on unless `identity.devAuth` says otherwise. */
  readonly settings?: ConfigOverrides | undefined
  /** Sign-in through an OAuth provider (`IdentityProviderOAuth` against `FakeIdentityProvider`); off by default. */
  readonly identityProvider?: Layer.Layer<Identity.IdentityProvider, unknown> | undefined
  /** Where the job runner sends mail (`MailTransportSmtp` against `FakeSmtpServer`); by default `SentMail` keeps it. */
  readonly mailTransport?: Layer.Layer<Mail.MailTransport, unknown> | undefined
  /** Domain registration (`RegistrarMemory`, or Name.com against `FakeNameCom`); off by default. */
  readonly registrar?: Layer.Layer<Domains.Registrar, unknown> | undefined
  /** Billing (`PaymentGatewayPolar` against `FakePolar`, or `PaymentGatewayMemory`); off by default. */
  readonly paymentGateway?: Layer.Layer<Billing.PaymentGateway, unknown> | undefined
  /** Any other provider adapters or fakes, each replacing its off form (they may read the settings). */
  readonly providers?: Layer.Layer<never, unknown, Configs> | undefined
  /** The host's own sign-in, for `server()`; off by default. */
  readonly hostAuthenticator?: Layer.Layer<HostAuthenticator, unknown> | undefined
}

/** The mail the default transport was handed, oldest first (what `outbox` reads). */
export class SentMail extends Context.Service<SentMail, { readonly messages: ReadonlyArray<Mail.MailMessage> }>()(
  "@hostplane/testkit/TestHostplane/SentMail"
) {}

const sentMail = Layer.unwrap(
  Effect.sync(() => {
    const messages: Array<Mail.MailMessage> = []
    return Layer.merge(
      Layer.succeed(SentMail, { messages }),
      Layer.succeed(Mail.MailTransport, {
        send: (message) => Effect.sync(() => void messages.push(message)),
        sendRaw: (message) => Effect.sync(() => message.id)
      })
    )
  })
)

/** When a test's clock starts: a date a host's data could carry, not 1970. */
export const testEpoch = Date.parse("2026-01-01T00:00:00.000Z")

/** Every port on memory stores and fakes: dev login on, a fresh sealer, cheap scrypt, no DNS, no PostgreSQL. */
const portsOf = (options: TestHostplaneOptions) => {
  const settings = configLayer({ ...options.settings, identity: { devAuth: true, ...options.settings?.identity } })
  return Layer.mergeAll(
    portsOff,
    Layer.fresh(layerMemory),
    settings,
    dnsNone,
    SealerAesGcm.layerEphemeral,
    PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 }),
    BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreMemory.layer)),
    // The last layer of a merge wins: each fake given replaces its off form above.
    options.mailTransport === undefined
      ? sentMail
      : Layer.merge(options.mailTransport, Layer.succeed(SentMail, { messages: [] })),
    options.identityProvider ?? Layer.empty,
    options.registrar ?? Layer.empty,
    options.paymentGateway ?? Layer.empty,
    (options.providers ?? Layer.empty).pipe(Layer.provide(settings)),
    options.hostAuthenticator ?? HostAuthenticator.off
  )
}

/** What `layer` provides: every port, every core service, the job runner and the mail it sent. */
export type TestHostplaneServices = Ports | Layer.Success<typeof services> | Jobs.JobRunner | SentMail

/**
 * Every hostplane service for a host's own tests, in one layer: memory stores and fakes, nothing but loopback, logs
 * off, and a `TestClock` standing at `testEpoch` (move it with `TestClock.adjust`). Jobs run when `drainJobs` says.
 */
export const layer = (options: TestHostplaneOptions = {}): Layer.Layer<TestHostplaneServices, unknown> => {
  const runner = Jobs.JobRunner.make().pipe(Layer.provide(jobHandlers), Layer.provide(services))
  const clock = Layer.effectDiscard(TestClock.setTime(testEpoch)).pipe(Layer.provideMerge(TestClock.layer()))
  return Layer.mergeAll(services, runner).pipe(
    Layer.provideMerge(portsOf(options)),
    Layer.provideMerge(clock),
    Layer.provide(Logger.layer([]))
  )
}

/** A signed-in actor: the dev login's user `subject`, created with a personal org on first use. */
export const asUser = (subject: string, profile: { readonly email?: string; readonly name?: string } = {}) =>
  Effect.flatMap(Effect.service(Identity.Identity), (identity) =>
    identity.actorOf({ provider: "dev", subject, email: profile.email ?? null, name: profile.name ?? null })
  )

/** The audit rows, oldest first, of one org (by slug) or all; `action` narrows them. */
export const auditOf = (filter: { readonly org?: string; readonly action?: string } = {}) =>
  Effect.gen(function* () {
    const log = yield* Kernel.AuditLog
    const orgId =
      filter.org === undefined
        ? undefined
        : yield* Effect.map(Effect.service(Orgs.OrgStore), (store) => store).pipe(
            Effect.flatMap((store) => store.findBySlug(filter.org!)),
            Effect.map((found) => (found._tag === "Some" ? found.value.id : "none"))
          )
    return yield* log.list({
      ...(orgId === undefined ? {} : { orgId }),
      ...(filter.action === undefined ? {} : { action: filter.action })
    })
  })

/** The mail sent so far through the default transport (after `drainJobs`: mail is sent by a job). */
export const outbox = Effect.map(Effect.service(SentMail), (sent) => [...sent.messages])

/** Runs every due job until none is left (at most `rounds` rounds); answers how many were claimed. */
export const drainJobs = (rounds = 100) =>
  Effect.gen(function* () {
    const runner = yield* Jobs.JobRunner
    let total = 0
    for (let round = 0; round < rounds; round++) {
      const claimed = yield* runner.runOnce()
      if (claimed === 0) break
      total += claimed
    }
    return total
  })

/** A user with a fresh org holding one project: the usual start of a test. */
export const orgWithProject = (
  options: { readonly subject?: string; readonly org?: string; readonly project?: string } = {}
) =>
  Effect.gen(function* () {
    const actor = yield* asUser(options.subject ?? "owner")
    const orgs = yield* Orgs.Orgs
    const projects = yield* Projects.Projects
    const org = yield* orgs.create(actor, { name: options.org ?? "Acme" })
    const project = yield* projects.create(actor, org.slug, options.project ?? "site")
    return { actor, org, project }
  })

/** The API served on a free loopback port, logs off: for host code that calls hostplane over HTTP. */
export interface TestServer extends Omit<Mounted<unknown>, "context"> {
  /** `http://127.0.0.1:<port>`: `/v1/...` is hostplane's. */
  readonly url: string
  /** A session token of the dev login's `subject`, for `Authorization: Bearer`. */
  readonly token: (subject: string) => Promise<string>
  /** Runs an effect on the server's services (read audit rows, drain jobs). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, TestHostplaneServices>) => Promise<A>
  readonly close: () => Promise<void>
}

/** `layer`'s services behind a real listener (the live clock: requests take real time). */
export const server = async (options: TestHostplaneOptions = {}): Promise<TestServer> => {
  const runner = Jobs.JobRunner.make().pipe(Layer.provide(jobHandlers), Layer.provide(services))
  const mounted = await mount(runner.pipe(Layer.provideMerge(portsOf(options)), Layer.provide(Logger.layer([]))))
  const listener = Http.createServer(mounted.listener)
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`
  const run = <A, E>(effect: Effect.Effect<A, E, TestHostplaneServices>) =>
    Effect.runPromise(Effect.provideContext(effect, mounted.context as Context.Context<TestHostplaneServices>))
  return {
    ...mounted,
    url,
    token: (subject) =>
      run(Effect.flatMap(Effect.service(Identity.Identity), (identity) => identity.devLogin({ subject }))).then(
        (session) => session.token
      ),
    run,
    close: async () => {
      listener.closeAllConnections()
      await new Promise((resolve) => listener.close(resolve))
      await mounted.dispose()
    }
  }
}
