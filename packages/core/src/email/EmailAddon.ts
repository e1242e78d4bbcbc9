import { Clock, Effect, Option } from "effect"
import { addonProvider, defineAddon } from "../addons/Addon.ts"
import { Settings } from "../kernel/Settings.ts"
import { EmailAddressTaken, EmailUnavailable } from "../errors/Errors.ts"
import type { ProjectAccess } from "../kernel/Policy.ts"
import { MailConfig } from "../mail/MailConfig.ts"
import { EmailStatus } from "./Email.ts"
import { EmailStore } from "./EmailStore.ts"

/** Spec 4.8's add-on: the address is fixed by the first grant and kept after a revoke. */
export const emailAddon = defineAddon({
  name: "email",
  status: EmailStatus,
  audit: { grant: "email.grant", revoke: "email.revoke" },
  refusals: [EmailUnavailable, EmailAddressTaken]
})

/** `<project>.<org>@<mail domain>`; empty without a mail domain. */
export const addressFor = (mailDomain: string, access: ProjectAccess): string =>
  mailDomain === "" ? "" : `${access.project.name}.${access.org.slug}@${mailDomain}`

export const emailProvider = Effect.gen(function* () {
  const store = yield* EmailStore
  const config = yield* MailConfig
  const { planLimits } = yield* Settings

  const statusOf = Effect.fnUntraced(function* (access: ProjectAccess) {
    const row = yield* store.addressOf(access.project.id)
    const since = new Date((yield* Clock.currentTimeMillis) - 24 * 3_600_000).toISOString()
    const counts = yield* store.countSince(access.project.id, since)
    const address = Option.match(row, {
      onNone: () => addressFor(config.mailDomain, access),
      onSome: (held) => held.address
    })
    return {
      granted: Option.isSome(row) && row.value.granted,
      address,
      from: address,
      hourlyCap: planLimits[access.org.plan].mailHourlyCap,
      sent24h: counts.sent,
      received24h: counts.received
    } satisfies EmailStatus
  })

  return addonProvider(emailAddon, {
    granted: (projectId) =>
      Effect.map(
        store.addressOf(projectId),
        Option.exists((row) => row.granted)
      ),
    connected: Effect.succeed(true),
    status: statusOf,
    grant: Effect.fnUntraced(function* (write) {
      const row = yield* store.addressOf(write.project.id)
      if (Option.isSome(row) && row.value.granted) return { answer: yield* statusOf(write), changed: false }
      if (config.mailDomain === "" && Option.isNone(row)) {
        return yield* new EmailUnavailable({ message: "this deployment has no mail domain (SERVICE_MAIL_DOMAIN)" })
      }
      // A grant after a revoke takes the same address back.
      const address = Option.isSome(row) ? row.value.address : addressFor(config.mailDomain, write)
      yield* store.saveAddress({ projectId: write.project.id, address, granted: true })
      return { answer: yield* statusOf(write), changed: true }
    }),
    revoke: Effect.fnUntraced(function* (write) {
      const row = yield* store.addressOf(write.project.id)
      if (Option.isNone(row) || !row.value.granted) return false
      yield* store.saveAddress({ ...row.value, granted: false })
      return true
    })
  })
})
