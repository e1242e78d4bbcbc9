import { Clock, Context, Effect, Layer } from "effect"
import { aiCreditRules } from "./AiCreditRules.ts"
import { gatewayFailure, returnToProblem } from "../billing/Billings.ts"
import { PaymentGateway } from "../billing/PaymentGateway.ts"
import {
  BadRequest,
  type BillingOff,
  type BillingUnavailable,
  type Forbidden,
  NoPaymentMethod,
  type NotFound
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { Settings } from "../kernel/Settings.ts"
import { pageSize } from "../kernel/PageCursor.ts"
import {
  type AICredit,
  type AutoTopup,
  autoTopupPerDay,
  autoTopupsOn,
  type CreditRow,
  creditTiers,
  type LedgerPage
} from "./Credit.ts"
import { CreditStore } from "./CreditStore.ts"

/** The UTC day of an instant, as `YYYY-MM-DD`. */
export const dayOf = (millis: number): string => new Date(millis).toISOString().slice(0, 10)

export const toCredit = (row: CreditRow, today: string): AICredit => ({
  balanceMicroCents: row.balanceMicroCents,
  hasPaymentMethod: row.hasPaymentMethod,
  autoTopup: row.autoTopup,
  autoTopupsToday: autoTopupsOn(row, today),
  autoTopupPerDay
})

const notATier = (field: string) =>
  new BadRequest({
    message: `${field} must be one of the credit tiers: ${creditTiers.join(", ")} micro-cents`,
    details: { field, tiers: creditTiers }
  })

/**
 * An org's prepaid AI credit (spec 4.10): the balance and its ledger (members read them), credit checkout and the
 * auto top-up consent (admins). The balance rises only through the `order.paid` webhook.
 */
export class Credits extends Context.Service<
  Credits,
  {
    readonly credit: (actor: Actor, orgSlug: string) => Effect.Effect<AICredit, NotFound | Forbidden>
    readonly ledger: (
      actor: Actor,
      orgSlug: string,
      query: { readonly limit?: number | undefined; readonly before?: number | undefined }
    ) => Effect.Effect<LedgerPage, NotFound | Forbidden>
    readonly checkout: (
      actor: Actor,
      orgSlug: string,
      input: { readonly microCents: number; readonly returnTo: string }
    ) => Effect.Effect<{ readonly url: string }, NotFound | Forbidden | BadRequest | BillingOff | BillingUnavailable>
    /** Answers the credit when turned on, nothing when turned off. */
    readonly setAutoTopup: (
      actor: Actor,
      orgSlug: string,
      input: {
        readonly enabled: boolean
        readonly amountMicroCents?: number | undefined
        readonly thresholdMicroCents?: number | undefined
      }
    ) => Effect.Effect<AICredit | undefined, NotFound | Forbidden | BadRequest | NoPaymentMethod>
  }
>()("@hostplane/core/ai/Credits") {
  static readonly layer = Layer.effect(
    Credits,
    Effect.gen(function* () {
      const store = yield* CreditStore
      const gateway = yield* PaymentGateway
      const policy = yield* Policy
      const mutation = yield* Mutation
      const settings = yield* Settings
      const today = Effect.map(Clock.currentTimeMillis, dayOf)

      const credit = Effect.fn("Credits.credit")(function* (actor: Actor, orgSlug: string) {
        const { org } = yield* policy.require(actor, orgSlug, aiCreditRules.credit)
        return toCredit(yield* store.find(org.id), yield* today)
      })

      const ledger = Effect.fn("Credits.ledger")(function* (
        actor: Actor,
        orgSlug: string,
        query: { readonly limit?: number | undefined; readonly before?: number | undefined }
      ) {
        const { org } = yield* policy.require(actor, orgSlug, aiCreditRules.ledger)
        const limit = pageSize(query.limit)
        const rows = yield* store.ledger(org.id, limit + 1, query.before)
        const items = rows.slice(0, limit)
        return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.ledger_id : null }
      })

      const checkout = Effect.fn("Credits.checkout")(function* (
        actor: Actor,
        orgSlug: string,
        input: { readonly microCents: number; readonly returnTo: string }
      ) {
        const { org } = yield* policy.require(actor, orgSlug, aiCreditRules.checkout)
        if (!creditTiers.includes(input.microCents)) return yield* notATier("microCents")
        const problem = returnToProblem(settings.publicUrl, input.returnTo)
        if (problem !== undefined) return yield* new BadRequest({ message: problem, details: { field: "returnTo" } })
        return yield* gateway
          .checkout({
            product: "credit",
            customer: org.id,
            successUrl: input.returnTo,
            amountCents: input.microCents / 1_000_000,
            metadata: { kind: "ai_credit", microCents: String(input.microCents), orgSlug: org.slug }
          })
          .pipe(Effect.mapError(gatewayFailure))
      })

      const setAutoTopup = Effect.fn("Credits.setAutoTopup")(function* (
        actor: Actor,
        orgSlug: string,
        input: {
          readonly enabled: boolean
          readonly amountMicroCents?: number | undefined
          readonly thresholdMicroCents?: number | undefined
        }
      ) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, aiCreditRules.autotopup)
        if (input.enabled) {
          const amount = input.amountMicroCents
          const threshold = input.thresholdMicroCents
          if (amount === undefined || !creditTiers.includes(amount)) return yield* notATier("amountMicroCents")
          if (threshold === undefined || !Number.isInteger(threshold) || threshold <= 0 || threshold >= amount) {
            return yield* new BadRequest({
              message: "thresholdMicroCents must be an integer above 0 and below amountMicroCents",
              details: { field: "thresholdMicroCents" }
            })
          }
        }
        const day = yield* today
        return yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            const current = yield* store.find(org.id)
            if (!input.enabled) {
              const off: AutoTopup = { ...current.autoTopup, enabled: false }
              yield* store.setAutoTopup(org.id, off, at)
              return audited(undefined, { action: "ai.autotopup.off", target: org.slug })
            }
            // Consent needs a stored payment method: the first top-up is a manual checkout.
            if (!current.hasPaymentMethod) {
              return yield* new NoPaymentMethod({ message: "buy credit once by checkout before enabling auto top-up" })
            }
            const on: AutoTopup = {
              enabled: true,
              amountMicroCents: input.amountMicroCents!,
              thresholdMicroCents: input.thresholdMicroCents!
            }
            yield* store.setAutoTopup(org.id, on, at)
            return audited(toCredit({ ...current, autoTopup: on }, day), {
              action: "ai.autotopup.on",
              target: org.slug,
              data: { amountMicroCents: on.amountMicroCents, thresholdMicroCents: on.thresholdMicroCents }
            })
          })
        )
      })

      return Credits.of({ credit, ledger, checkout, setAutoTopup })
    })
  )
}
