import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { billingRules } from "./BillingRules.ts"
import { CreditStore } from "../ai/CreditStore.ts"
import {
  AlreadyPro,
  BadRequest,
  BillingOff,
  BillingUnavailable,
  Forbidden,
  NotFound,
  NotPro
} from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import type { OrgId } from "../kernel/Ids.ts"
import { Mutation, unaudited } from "../kernel/Mutation.ts"
import { NodeRevisions } from "../kernel/NodeRevisions.ts"
import { Policy } from "../kernel/Policy.ts"
import { Settings } from "../kernel/Settings.ts"
import { nowIso } from "../kernel/Time.ts"
import { Transactor } from "../kernel/Transactor.ts"
import type { OrgRow, Plan } from "../orgs/Org.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import {
  type BillingStatus,
  type CancelAnswer,
  isLive,
  shownStatus,
  type SubscriptionRow,
  WebhookBody
} from "./Billing.ts"
import { BillingConfig } from "./BillingConfig.ts"
import { BillingStore } from "./BillingStore.ts"
import { PaymentGateway, type PaymentGatewayError } from "./PaymentGateway.ts"
import * as StandardWebhooks from "./StandardWebhooks.ts"
import { AuthCache, AuthChange } from "../identity/AuthCache.ts"

/** A webhook delivery as received: the three Standard Webhooks headers (absent ones undefined) and the raw body. */
export interface WebhookDelivery {
  readonly id: string | undefined
  readonly timestamp: string | undefined
  readonly signature: string | undefined
  readonly body: string
}

/** A gateway failure in the spec's words: 501 `billing_off`, 404 for an unknown customer, 502 `billing_unavailable`. */
export const gatewayFailure = (error: PaymentGatewayError): BillingOff | NotFound | BillingUnavailable =>
  error.reason === "off"
    ? new BillingOff({ message: error.message })
    : error.reason === "unknown"
      ? new NotFound({ message: "the payment provider has no billing history for this org" })
      : new BillingUnavailable({ message: "the payment provider did not answer; try again" })

/**
 * `returnTo` rule of decisions.md part 4: parsed as a URL, its origin equals the public URL's and its path starts with
 * the public URL's path (at a segment boundary), with no credentials: no string-prefix tricks.
 */
export const returnToProblem = (publicUrl: string, returnTo: string): string | undefined => {
  const base = URL.canParse(publicUrl) ? new URL(publicUrl) : undefined
  if (base === undefined || !URL.canParse(returnTo)) return "returnTo must be an absolute URL"
  const target = new URL(returnTo)
  const basePath = base.pathname.replace(/\/+$/, "")
  const under = target.pathname === basePath || target.pathname.startsWith(`${basePath}/`)
  if (target.origin !== base.origin || !under || target.username !== "" || target.password !== "") {
    return `returnTo must be under ${publicUrl}`
  }
  return undefined
}

/** The org a webhook names: `data.customer.external_id` (the org id), else `data.metadata.orgSlug`. */
const orgOf = (store: OrgStore["Service"], body: WebhookBody): Effect.Effect<Option.Option<OrgRow>> => {
  const external = body.data.customer?.external_id
  if (typeof external === "string" && external !== "") return store.findById(external as OrgId)
  const slug = body.data.metadata?.orgSlug
  return typeof slug === "string" ? store.findBySlug(slug) : Effect.succeed(Option.none())
}

const emptyRow = (orgId: OrgId, at: string): SubscriptionRow => ({
  orgId,
  subscriptionId: null,
  status: null,
  periodEnd: null,
  cancelAtPeriodEnd: false,
  eventAt: null,
  customerSince: null,
  updatedAt: at
})

const decodeBody = Schema.decodeUnknownOption(Schema.fromJsonString(WebhookBody))

/**
 * Plan billing of spec 4.15 through a payment provider: the plan changes only when the provider's signed webhook
 * says so (spec part 3); checkout, portal, customer session and cancel talk to the provider; `order.paid` for AI
 * credit raises the org's balance with a `topup` ledger row.
 */
export class Billings extends Context.Service<
  Billings,
  {
    readonly status: (actor: Actor, orgSlug: string) => Effect.Effect<BillingStatus, NotFound | Forbidden>
    readonly checkout: (
      actor: Actor,
      orgSlug: string,
      returnTo: string
    ) => Effect.Effect<
      { readonly url: string },
      NotFound | Forbidden | BadRequest | AlreadyPro | BillingOff | BillingUnavailable
    >
    readonly portal: (
      actor: Actor,
      orgSlug: string,
      returnTo: string | undefined
    ) => Effect.Effect<{ readonly url: string }, NotFound | Forbidden | BadRequest | BillingOff | BillingUnavailable>
    readonly session: (
      actor: Actor,
      orgSlug: string
    ) => Effect.Effect<
      { readonly token: string; readonly expiresAt: string },
      NotFound | Forbidden | BillingOff | BillingUnavailable
    >
    readonly cancel: (
      actor: Actor,
      orgSlug: string,
      cancel: boolean
    ) => Effect.Effect<CancelAnswer, NotFound | Forbidden | NotPro | BillingOff | BillingUnavailable>
    /** 501 without a secret, 403 for any signature or time mismatch, 400 for a body that is no webhook. */
    readonly webhook: (
      delivery: WebhookDelivery
    ) => Effect.Effect<{ readonly applied: boolean }, BillingOff | Forbidden | BadRequest>
  }
>()("@hostplane/core/billing/Billings") {
  static readonly layer = Layer.effect(
    Billings,
    Effect.gen(function* () {
      const store = yield* BillingStore
      const orgs = yield* OrgStore
      const credit = yield* CreditStore
      const gateway = yield* PaymentGateway
      const policy = yield* Policy
      const mutation = yield* Mutation
      const tx = yield* Transactor
      const cache = yield* AuthCache
      const projects = yield* ProjectStore
      const revisions = yield* NodeRevisions
      const settings = yield* Settings
      const config = yield* BillingConfig
      const webhookKey = Option.map(config.webhookSecret, (secret) =>
        StandardWebhooks.keyOfSecretText(Redacted.value(secret))
      )

      const checkReturnTo = (returnTo: string) => {
        const problem = returnToProblem(settings.publicUrl, returnTo)
        return problem === undefined
          ? Effect.void
          : Effect.fail(new BadRequest({ message: problem, details: { field: "returnTo" } }))
      }

      const requirePlans = gateway.status.plans
        ? Effect.void
        : Effect.fail(new BillingOff({ message: "billing is not configured in this deployment" }))

      const rowOf = (orgId: OrgId) => Effect.map(store.find(orgId), Option.getOrUndefined)

      const status = Effect.fn("Billings.status")(function* (actor: Actor, orgSlug: string) {
        const { org } = yield* policy.require(actor, orgSlug, billingRules.status)
        const row = yield* rowOf(org.id)
        return {
          plan: org.plan,
          status: row?.status == null ? null : shownStatus(row.status),
          periodEnd: row?.periodEnd ?? null,
          cancelAtPeriodEnd: row?.cancelAtPeriodEnd ?? false,
          enabled: gateway.status.plans,
          sandbox: gateway.status.sandbox,
          limits: settings.planLimits
        } satisfies BillingStatus
      })

      const checkout = Effect.fn("Billings.checkout")(function* (actor: Actor, orgSlug: string, returnTo: string) {
        const { org } = yield* policy.require(actor, orgSlug, billingRules.checkout)
        yield* checkReturnTo(returnTo)
        yield* requirePlans
        if (org.plan === "pro") return yield* new AlreadyPro({ message: `${org.slug} is already on the pro plan` })
        return yield* gateway
          .checkout({ product: "pro", customer: org.id, successUrl: returnTo, metadata: { orgSlug: org.slug } })
          .pipe(Effect.mapError(gatewayFailure))
      })

      /** A customer session for an org with billing history; 404 for one that never paid. */
      const customerSession = Effect.fnUntraced(function* (org: OrgRow, returnTo: string | undefined) {
        yield* requirePlans
        const row = yield* rowOf(org.id)
        if (row?.customerSince == null) {
          return yield* new NotFound({ message: `${org.slug} has no billing history` })
        }
        return yield* gateway.customerSession(org.id, returnTo).pipe(Effect.mapError(gatewayFailure))
      })

      const portal = Effect.fn("Billings.portal")(function* (
        actor: Actor,
        orgSlug: string,
        returnTo: string | undefined
      ) {
        const { org } = yield* policy.require(actor, orgSlug, billingRules.portal)
        if (returnTo !== undefined) yield* checkReturnTo(returnTo)
        const session = yield* customerSession(org, returnTo)
        return { url: session.portalUrl }
      })

      const session = Effect.fn("Billings.session")(function* (actor: Actor, orgSlug: string) {
        const { org } = yield* policy.require(actor, orgSlug, billingRules.session)
        const opened = yield* customerSession(org, undefined)
        return { token: opened.token, expiresAt: opened.expiresAt }
      })

      const cancel = Effect.fn("Billings.cancel")(function* (actor: Actor, orgSlug: string, cancel: boolean) {
        const grant = yield* mutation.authorizeOrg(actor, orgSlug, billingRules.cancel)
        yield* requirePlans
        const row = yield* rowOf(grant.org.id)
        if (grant.org.plan !== "pro" || row?.subscriptionId == null || !isLive(row.status)) {
          return yield* new NotPro({ message: `${grant.org.slug} has no pro subscription` })
        }
        const changed = yield* gateway
          .setCancelAtPeriodEnd(row.subscriptionId, cancel)
          .pipe(Effect.mapError(gatewayFailure))
        // The row changes at once; the provider's webhook agrees later.
        return yield* mutation.org(grant, ({ org, at }) =>
          Effect.gen(function* () {
            const current = (yield* rowOf(org.id)) ?? row
            const next: SubscriptionRow = {
              ...current,
              status: changed.status,
              periodEnd: changed.periodEnd ?? current.periodEnd,
              cancelAtPeriodEnd: changed.cancelAtPeriodEnd,
              updatedAt: at
            }
            yield* store.save(next)
            return unaudited({
              status: shownStatus(changed.status),
              cancelAtPeriodEnd: next.cancelAtPeriodEnd,
              periodEnd: next.periodEnd
            } satisfies CancelAnswer)
          })
        )
      })

      const applySubscription = Effect.fnUntraced(function* (
        org: OrgRow,
        body: WebhookBody,
        eventAt: string,
        at: string
      ) {
        const { id, status } = body.data
        if (id === undefined || status === undefined) return false
        const row = (yield* rowOf(org.id)) ?? emptyRow(org.id, at)
        // An older event delivered after a newer one (retries reorder them) must not undo it.
        if (row.eventAt !== null && Date.parse(eventAt) < Date.parse(row.eventAt)) return false
        yield* store.save({
          ...row,
          subscriptionId: id,
          status,
          periodEnd: body.data.current_period_end ?? null,
          cancelAtPeriodEnd: body.data.cancel_at_period_end ?? false,
          eventAt,
          customerSince: row.customerSince ?? at,
          updatedAt: at
        })
        const plan: Plan = isLive(status) ? "pro" : "free"
        if (plan === org.plan) return false
        yield* orgs.setPlan(org.id, plan)
        // The plan sets numbers nodes apply (the email binding's hourlyCap, storage's quotaBytes): every project of the
        // org is changed for them, in the same transaction, so the node state never shows the new plan half applied.
        for (const project of yield* projects.list(org.id)) {
          if (project.deletingSince === null) yield* revisions.raise(project.id)
        }
        return true
      })

      const applyOrder = Effect.fnUntraced(function* (org: OrgRow, body: WebhookBody, at: string) {
        const row = (yield* rowOf(org.id)) ?? emptyRow(org.id, at)
        if (row.customerSince === null) yield* store.save({ ...row, customerSince: at, updatedAt: at })
        const metadata = body.data.metadata ?? {}
        const microCents = typeof metadata.microCents === "string" ? metadata.microCents : ""
        if (metadata.kind !== "ai_credit" || !/^[1-9]\d{0,15}$/.test(microCents)) return false
        yield* credit.append({
          orgId: org.id,
          kind: "topup",
          amountMicroCents: Number(microCents),
          projectName: null,
          model: null,
          at
        })
        yield* credit.setPaymentMethod(org.id, at)
        return true
      })

      const webhook = Effect.fn("Billings.webhook")(function* (delivery: WebhookDelivery) {
        if (Option.isNone(webhookKey)) {
          return yield* new BillingOff({ message: "the billing webhook is off: no webhook secret is configured" })
        }
        const { id, timestamp, signature } = delivery
        if (id === undefined || timestamp === undefined || signature === undefined) {
          return yield* new Forbidden({ message: "webhook-id, webhook-timestamp and webhook-signature are required" })
        }
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const rejected = yield* StandardWebhooks.verify(
          webhookKey.value,
          { id, timestamp, signature, body: delivery.body },
          now
        )
        if (rejected !== undefined) {
          return yield* new Forbidden({
            message: `webhook signature refused (${rejected})`,
            details: { reason: rejected }
          })
        }
        const body = decodeBody(delivery.body)
        if (Option.isNone(body)) {
          return yield* new BadRequest({ message: "the webhook body is not a JSON object with type and data" })
        }
        const event = body.value
        const sentAt = new Date(Number(timestamp) * 1000).toISOString()
        const eventAt =
          event.timestamp !== undefined && !Number.isNaN(Date.parse(event.timestamp)) ? event.timestamp : sentAt
        const applied = yield* tx.withTransaction(
          Effect.gen(function* () {
            const at = yield* nowIso
            if (!(yield* store.claimWebhook(id, event.type, at))) return false
            const org = yield* orgOf(orgs, event)
            if (Option.isNone(org)) return false
            yield* orgs.lock(org.value.id)
            // Read again under the lock: a concurrent event of the same org may have changed the plan.
            const current = Option.getOrElse(yield* orgs.findById(org.value.id), () => org.value)
            switch (event.type) {
              case "subscription.active":
              case "subscription.updated":
                return yield* applySubscription(current, event, eventAt, at)
              case "order.paid":
                return yield* applyOrder(current, event, at)
              default:
                return false
            }
          })
        )
        // A plan shows in every member's `/v1/me`; webhooks are rare enough to forget everything.
        if (applied) yield* cache.changed(AuthChange.all)
        return { applied }
      })

      return Billings.of({ status, checkout, portal, session, cancel, webhook })
    })
  )
}
