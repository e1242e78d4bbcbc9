import { Config, Context, Effect, Layer, Option, Redacted } from "effect"

/** The billing settings core reads itself; the payment provider's own settings belong to its adapter. */
export interface BillingConfigShape {
  /** `SERVICE_BILLING_WEBHOOK_SECRET`: without it the billing webhook answers 501. */
  readonly webhookSecret: Option.Option<Redacted.Redacted<string>>
}

/** Billing settings (decisions.md part 7, payment). */
export class BillingConfig extends Context.Service<BillingConfig, BillingConfigShape>()(
  "@hostplane/core/billing/BillingConfig"
) {
  static readonly make = (overrides: Partial<BillingConfigShape> = {}) =>
    Layer.succeed(BillingConfig, { webhookSecret: Option.none(), ...overrides })

  /** `SERVICE_BILLING_WEBHOOK_SECRET` (empty counts as unset). */
  static readonly layerConfig = Layer.effect(
    BillingConfig,
    Effect.map(Config.option(Config.Redacted("SERVICE_BILLING_WEBHOOK_SECRET")), (secret) => ({
      webhookSecret: Option.filter(secret, (value) => Redacted.value(value).trim() !== "")
    }))
  )
}
