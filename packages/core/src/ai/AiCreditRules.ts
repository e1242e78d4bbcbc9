import * as Rule from "../kernel/Rule.ts"

/** Spec 4.10's prepaid AI credit of an org. */
export const aiCreditRules = {
  credit: Rule.org("member"),
  ledger: Rule.org("member"),
  checkout: Rule.org("admin"),
  autotopup: Rule.org("admin")
} as const
