import * as Rule from "../kernel/Rule.ts"

/** Spec 4.2's invites of an org. */
export const inviteRules = {
  list: Rule.org("admin"),
  create: Rule.org("admin"),
  revoke: Rule.org("admin")
} as const
