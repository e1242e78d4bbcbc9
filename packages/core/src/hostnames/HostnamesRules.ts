import * as Rule from "../kernel/Rule.ts"

/** Spec 4.4's custom hostnames of a project. */
export const hostnamesRules = {
  list: Rule.project("viewer"),
  add: Rule.project("member", { deleting: "atWrite" }),
  remove: Rule.project("member"),
  verify: Rule.project("member"),
  retryTls: Rule.project("member")
} as const
