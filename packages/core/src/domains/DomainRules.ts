import * as Rule from "../kernel/Rule.ts"

/** Spec 4.13's domains of an org. */
export const domainRules = {
  list: Rule.org("viewer"),
  purchase: Rule.org("admin"),
  check: Rule.org("member"),
  import: Rule.org("admin"),
  get: Rule.org("viewer"),
  renew: Rule.org("admin"),
  autoRenew: Rule.org("admin"),
  lock: Rule.org("admin"),
  authCode: Rule.org("admin"),
  sync: Rule.org("member")
} as const
