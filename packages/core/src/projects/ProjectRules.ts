import * as Rule from "../kernel/Rule.ts"

/** Spec 4.3's projects of an org. */
export const projectRules = {
  list: Rule.org("viewer"),
  create: Rule.org("member"),
  get: Rule.project("viewer"),
  overview: Rule.project("viewer"),
  remove: Rule.project("admin", { deleting: "allow" }),
  operation: Rule.org("viewer")
} as const
