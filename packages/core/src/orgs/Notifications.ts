import { Context, Effect, Layer, Option } from "effect"
import { orgRules } from "./OrgRules.ts"
import { BadRequest, type Forbidden, type NotFound } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { newId, type OrgId } from "../kernel/Ids.ts"
import { decodePageCursor, encodePageCursor, pageSize } from "../kernel/PageCursor.ts"
import { Policy } from "../kernel/Policy.ts"
import { Settings } from "../kernel/Settings.ts"
import { nowIso } from "../kernel/Time.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { MailConfig } from "../mail/MailConfig.ts"
import { mailQueue } from "../mail/SendMail.ts"
import type { Notification, NotificationPage } from "./Org.ts"
import { OrgStore } from "./OrgStore.ts"

/** A notice an area raises (a restore finished, a generation failed its re-hash). */
export interface Notice {
  readonly kind: Notification["kind"]
  readonly projectName: string | null
  /** The email's subject; the notice's `message` is its body's first line. */
  readonly subject: string
  readonly message: string
  /**
   * Makes the notice once-only: a second notice with the same key (a job phase run again after a crash, another
   * replica's round) records and mails nothing. The notification's id is derived from it.
   */
  readonly once?: string | undefined
}

/**
 * The org's limit, backup and restore notices, newest first. A notice is mailed to every admin with an address, in
 * the transaction that records it; its `sentAt` is the first admin's mail going out (null: queued, or nobody to send to).
 */
export class Notifications extends Context.Service<
  Notifications,
  {
    /** A page, newest first: `limit` rows (50 when absent), after the row `cursor` (a `nextCursor`) names. */
    readonly list: (
      actor: Actor,
      slug: string,
      limit: number | undefined,
      cursor?: string | undefined
    ) => Effect.Effect<NotificationPage, NotFound | Forbidden | BadRequest>
    readonly notify: (orgId: OrgId, notice: Notice) => Effect.Effect<void>
  }
>()("@hostplane/core/orgs/Notifications") {
  static readonly layer = Layer.effect(
    Notifications,
    Effect.gen(function* () {
      const store = yield* OrgStore
      const policy = yield* Policy
      const tokens = yield* Tokens
      const transactor = yield* Transactor
      const settings = yield* Settings
      const { mailFrom } = yield* MailConfig
      const enqueueMail = yield* mailQueue
      const list = Effect.fn("Notifications.list")(function* (
        actor: Actor,
        slug: string,
        limit: number | undefined,
        cursor?: string | undefined
      ) {
        const { org } = yield* policy.require(actor, slug, orgRules.notifications)
        const before = cursor === undefined || cursor === "" ? Option.none() : decodePageCursor(cursor, "ntf")
        if (cursor !== undefined && cursor !== "" && Option.isNone(before)) {
          return yield* new BadRequest({ message: "cursor is not one this API returned", details: { field: "cursor" } })
        }
        const size = pageSize(limit)
        const rows = yield* store.listNotifications(org.id, size + 1, Option.getOrUndefined(before))
        const items = rows.slice(0, size)
        const last = items.at(-1)
        return {
          items,
          nextCursor: rows.length > size && last !== undefined ? encodePageCursor(last) : null
        } satisfies NotificationPage
      })
      const notify = Effect.fn("Notifications.notify")(function* (orgId: OrgId, notice: Notice) {
        const id =
          notice.once === undefined
            ? yield* newId(tokens, "ntf")
            : `ntf_${(yield* tokens.hash(notice.once)).slice(0, 26)}`
        yield* transactor.withTransaction(
          Effect.gen(function* () {
            const at = yield* nowIso
            const admins = (yield* store.listMembers(orgId)).filter(
              (member) => member.role === "admin" && member.email !== null && member.email !== ""
            )
            const mailIds: Array<string> = []
            for (const _ of admins) mailIds.push(yield* tokens.id("mail"))
            // The notice first: when its id is already recorded, nothing is mailed again.
            const recorded = yield* store.insertNotification({
              id,
              orgId,
              kind: notice.kind,
              message: notice.message,
              projectName: notice.projectName,
              mailId: mailIds[0] ?? null,
              createdAt: at
            })
            if (!recorded) return
            for (const [index, admin] of admins.entries()) {
              yield* enqueueMail(
                {
                  id: mailIds[index]!,
                  from: mailFrom,
                  to: admin.email!,
                  subject: `${notice.subject} (${settings.productName})`,
                  text: notice.message
                },
                at
              )
            }
          })
        )
      })
      return Notifications.of({ list, notify })
    })
  )
}
