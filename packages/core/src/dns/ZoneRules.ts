import * as Rule from "../kernel/Rule.ts"

/** Spec 4.14's DNS zones of an org. */
export const zoneRules = {
  list: Rule.org("viewer"),
  create: Rule.org("admin"),
  get: Rule.org("viewer"),
  remove: Rule.org("admin"),
  putRrset: Rule.org("member"),
  removeRrset: Rule.org("member"),
  dnssec: Rule.org("admin"),
  putDs: Rule.org("admin")
} as const
