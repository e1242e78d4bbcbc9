import { Schema } from "effect"
import type { OrgId } from "../kernel/Ids.ts"

/** AI credit tiers in micro-cents (decisions.md part 3; 1 USD = 100,000,000). */
export const creditTiers: ReadonlyArray<number> = [500_000_000, 1_000_000_000, 2_500_000_000, 10_000_000_000]

/** Auto top-ups allowed per org per day. */
export const autoTopupPerDay = 3

export const LedgerKind = Schema.Literals(["call", "topup", "adjust"])
export type LedgerKind = typeof LedgerKind.Type

/** One ledger row as the API shows it (`ledger_id` spelled as the spec spells it). */
export const LedgerRow = Schema.Struct({
  ledger_id: Schema.Number,
  kind: LedgerKind,
  amountMicroCents: Schema.Number,
  projectName: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  createdAt: Schema.String
})
export type LedgerRow = typeof LedgerRow.Type

export const AutoTopup = Schema.Struct({
  enabled: Schema.Boolean,
  amountMicroCents: Schema.NullOr(Schema.Number),
  thresholdMicroCents: Schema.NullOr(Schema.Number)
})
export type AutoTopup = typeof AutoTopup.Type

/** An org's credit as stored; an org that never bought credit has the zero row. */
export interface CreditRow {
  readonly orgId: OrgId
  readonly balanceMicroCents: number
  readonly hasPaymentMethod: boolean
  readonly autoTopup: AutoTopup
  /** The UTC day (`YYYY-MM-DD`) `autoTopupsOnDay` counts; null before the first auto top-up. */
  readonly autoTopupDay: string | null
  readonly autoTopupsOnDay: number
}

/** A ledger entry to append; the store adds its id and moves the balance by `amountMicroCents` in the same step. */
export interface LedgerEntry {
  readonly orgId: OrgId
  readonly kind: LedgerKind
  /** Negative for a call, positive for a top-up. */
  readonly amountMicroCents: number
  readonly projectName: string | null
  readonly model: string | null
  readonly at: string
}

export const zeroCredit = (orgId: OrgId): CreditRow => ({
  orgId,
  balanceMicroCents: 0,
  hasPaymentMethod: false,
  autoTopup: { enabled: false, amountMicroCents: null, thresholdMicroCents: null },
  autoTopupDay: null,
  autoTopupsOnDay: 0
})

/** Auto top-ups started on `day` (a UTC `YYYY-MM-DD`). */
export const autoTopupsOn = (credit: CreditRow, day: string): number =>
  credit.autoTopupDay === day ? credit.autoTopupsOnDay : 0

export const AICredit = Schema.Struct({
  balanceMicroCents: Schema.Number,
  hasPaymentMethod: Schema.Boolean,
  autoTopup: AutoTopup,
  autoTopupsToday: Schema.Number,
  autoTopupPerDay: Schema.Number
})
export type AICredit = typeof AICredit.Type

export const LedgerPage = Schema.Struct({ items: Schema.Array(LedgerRow), nextCursor: Schema.NullOr(Schema.Number) })
export type LedgerPage = typeof LedgerPage.Type

const Tier = Schema.Number.annotate({ description: `One of ${creditTiers.join(", ")} micro-cents.` })

export const CreditCheckoutInput = Schema.Struct({ microCents: Tier, returnTo: Schema.String })
export const AutoTopupInput = Schema.Struct({
  enabled: Schema.Boolean,
  amountMicroCents: Schema.optionalKey(Tier),
  thresholdMicroCents: Schema.optionalKey(Schema.Number)
})
