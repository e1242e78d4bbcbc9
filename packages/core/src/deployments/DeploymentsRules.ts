import * as Rule from "../kernel/Rule.ts"

/** Spec 4.3's deployments of a project. */
export const deploymentsRules = {
  list: Rule.project("viewer"),
  upload: Rule.project("member"),
  rollback: Rule.project("member")
} as const
