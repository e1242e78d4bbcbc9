import * as Rule from "../kernel/Rule.ts"

/** Spec 4.15's plan billing of an org. */
export const billingRules = {
  status: Rule.org("viewer"),
  checkout: Rule.org("admin"),
  portal: Rule.org("admin"),
  session: Rule.org("admin"),
  cancel: Rule.org("admin")
} as const
