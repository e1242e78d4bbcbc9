import * as Rule from "../kernel/Rule.ts"

/** Spec 4.2's organization itself. */
export const orgRules = {
  rename: Rule.org("admin"),
  remove: Rule.org("admin"),
  notifications: Rule.org("viewer")
} as const
