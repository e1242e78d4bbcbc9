import { ArtifactStoreDisk, BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import { area, configLayer, Identity, Kernel, Mail, Orgs, servicesWith } from "@hostplane/core"
import { layerMemory, portsOff } from "@hostplane/testkit"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"

/** A fresh random sealing key and scrypt at its lowest cost. */
export const testCrypto = Layer.merge(
  SealerAesGcm.layerEphemeral,
  PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 })
)

/** Bundle uploads into a temporary artifact folder, removed with the layer. */
export const testBundles = BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))

/** Every core service on a fresh memory store, as a host would assemble it. */
/** Every port core's services need, on memory stores and fakes: what a core test builds the services on. */
export const memoryPorts = Layer.mergeAll(layerMemory, configLayer(), portsOff, dnsNone, testCrypto, testBundles)

export const coreMemory = (
  options: {
    readonly holdings?: ReadonlyArray<Orgs.HoldingCounter>
    readonly hasSubscription?: (orgId: string) => Effect.Effect<boolean>
  } = {}
) => {
  // The test's holdings and subscription check arrive as one more area, beside core's own.
  const fixture = area({
    name: "fixture",
    stores: [],
    services: Layer.empty,
    holdings: (options.holdings ?? []).map((counter) => Effect.succeed(counter)),
    ...(options.hasSubscription === undefined ? {} : { subscription: Effect.succeed(options.hasSubscription) })
  })
  return servicesWith([fixture]).pipe(Layer.provideMerge(memoryPorts))
}

export type Core = Layer.Success<ReturnType<typeof coreMemory>>

/** 2030-01-01T00:00:00Z: the TestClock starts at 1970 and every test sets it first. */
export const start = Date.UTC(2030, 0, 1)

/** Runs a test on a fresh core with the clock set to `start`. */
export const withCore =
  (options?: Parameters<typeof coreMemory>[0]) =>
  <A, E>(test: Effect.Effect<A, E, Core>): Effect.Effect<A, E> =>
    Effect.andThen(TestClock.setTime(start), test).pipe(Effect.provide(coreMemory(options)))

export interface SignedIn {
  readonly actor: Kernel.Actor
  readonly session: Identity.Session
}

/** Dev login of `subject`, then the session check, as a request would do. */
export const signIn = Effect.fnUntraced(function* (subject: string, profile: { email?: string; name?: string } = {}) {
  const identity = yield* Identity.Identity
  const session = yield* identity.devLogin({ subject, ...profile })
  const actor = yield* identity.authenticate(session.token)
  return { actor, session } satisfies SignedIn
})

/** A user who belongs to `slug` with `role`, added by `admin`. */
export const memberOf = Effect.fnUntraced(function* (
  admin: Kernel.Actor,
  slug: string,
  subject: string,
  role: Kernel.Role,
  profile: { email?: string; name?: string } = {}
) {
  const user = yield* signIn(subject, profile)
  yield* (yield* Orgs.Members).add(admin, slug, { provider: "dev", subject, role })
  return user
})

export const orgIdOf = Effect.fnUntraced(function* (slug: string) {
  return Option.getOrThrow(yield* (yield* Orgs.OrgStore).findBySlug(slug)).id
})

/** The audit rows of one org, or of one action in it. */
export const auditOf = Effect.fnUntraced(function* (slug: string, action?: string) {
  const orgId = yield* orgIdOf(slug)
  return yield* (yield* Kernel.AuditLog).list(action === undefined ? { orgId } : { orgId, action })
})

/** The invitation email of an invite, read from the outbox. */
export const inviteMail = Effect.fnUntraced(function* (slug: string, inviteId: Kernel.InviteId) {
  const invite = Option.getOrThrow(yield* (yield* Orgs.OrgStore).findInvite(yield* orgIdOf(slug), inviteId))
  if (invite.mailId === null) return yield* Effect.die("the invite has no mail")
  return Option.getOrThrow(yield* (yield* Mail.MailOutbox).get(invite.mailId))
})

/** The token of an invite, taken from the `<publicUrl>/invites/<token>` link of its email. */
export const inviteToken = Effect.fnUntraced(function* (slug: string, inviteId: Kernel.InviteId) {
  const mail = yield* inviteMail(slug, inviteId)
  const link = /http:\/\/localhost:8080\/invites\/([A-Za-z0-9_-]+)/.exec(mail.text)
  if (link === null) return yield* Effect.die(`no invite link in ${mail.text}`)
  return link[1] as string
})
