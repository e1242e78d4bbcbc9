import * as Rule from "../kernel/Rule.ts"

/** Spec 4.2's members of an org. Removing another member needs an admin; removing yourself (leaving) any member. */
export const memberRules = {
  list: Rule.org("member"),
  add: Rule.org("admin"),
  setRole: Rule.org("admin"),
  remove: Rule.bySubject("userId", { self: Rule.org("viewer"), others: Rule.org("admin") })
} as const
