import { Schema } from "effect"

/** An org's plan (spec part 3). */
export const Plan = Schema.Literals(["free", "pro"])
export type Plan = typeof Plan.Type

/** The AI limits of a plan (decisions.md part 3); 0 means the model decides. */
export const AiLimits = Schema.Struct({
  maxOutputTokens: Schema.Number,
  maxInputTokens: Schema.Number,
  requestsPerMinute: Schema.Number,
  dailySpendMicroCents: Schema.Number
})
export type AiLimits = typeof AiLimits.Type

export const PlanLimits = Schema.Struct({
  projectLimit: Schema.Number,
  storageQuotaBytes: Schema.Number,
  mailHourlyCap: Schema.Number,
  mailKeepDays: Schema.Number,
  ai: AiLimits
})
export type PlanLimits = typeof PlanLimits.Type

/** Every plan's numbers: what the areas that meter an org read, by its plan at the time of the check. */
export type PlanTable = { readonly [P in Plan]: PlanLimits }

const GiB = 1024 * 1024 * 1024

/** The numbers of decisions.md part 3, in force unless `SERVICE_PLAN_LIMITS` overrides some of them. */
export const defaultPlanTable: PlanTable = {
  free: {
    projectLimit: 3,
    storageQuotaBytes: 1 * GiB,
    mailHourlyCap: 50,
    mailKeepDays: 30,
    ai: { maxOutputTokens: 4096, maxInputTokens: 32768, requestsPerMinute: 20, dailySpendMicroCents: 100_000_000 }
  },
  pro: {
    projectLimit: 50,
    storageQuotaBytes: 100 * GiB,
    mailHourlyCap: 1000,
    mailKeepDays: 365,
    ai: { maxOutputTokens: 0, maxInputTokens: 0, requestsPerMinute: 600, dailySpendMicroCents: 10_000_000_000 }
  }
}

/** A count or an amount: a whole number from 0 up, exact as a JSON number. */
const Amount = Schema.Number.check(
  Schema.isInt(),
  Schema.isGreaterThanOrEqualTo(0),
  Schema.isLessThanOrEqualTo(Number.MAX_SAFE_INTEGER)
)

const LimitsOverride = Schema.Struct({
  projectLimit: Schema.optionalKey(Amount),
  storageQuotaBytes: Schema.optionalKey(Amount),
  mailHourlyCap: Schema.optionalKey(Amount),
  mailKeepDays: Schema.optionalKey(Amount),
  ai: Schema.optionalKey(
    Schema.Struct({
      maxOutputTokens: Schema.optionalKey(Amount),
      maxInputTokens: Schema.optionalKey(Amount),
      requestsPerMinute: Schema.optionalKey(Amount),
      dailySpendMicroCents: Schema.optionalKey(Amount)
    })
  )
})

/**
 * `SERVICE_PLAN_LIMITS` (decisions.md part 15): per plan, some of PlanLimits' fields by their names. Decoded with
 * excess properties refused, so a misspelt limit stops the start instead of leaving the default in force unnoticed.
 */
export const PlanTableOverride = Schema.Struct({
  free: Schema.optionalKey(LimitsOverride),
  pro: Schema.optionalKey(LimitsOverride)
})
export type PlanTableOverride = typeof PlanTableOverride.Type

/** Part 3's table with the overridden numbers in place of its own. */
export const planTableWith = (override: PlanTableOverride): PlanTable => {
  const plan = (name: Plan): PlanLimits => {
    const base = defaultPlanTable[name]
    const own = override[name] ?? {}
    return { ...base, ...own, ai: { ...base.ai, ...own.ai } }
  }
  return { free: plan("free"), pro: plan("pro") }
}
