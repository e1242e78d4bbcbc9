import * as Rule from "../kernel/Rule.ts"

/** Spec 4.5's secrets of a project. */
export const secretsRules = {
  list: Rule.project("member"),
  put: Rule.project("member", { deleting: "atWrite" }),
  remove: Rule.project("member")
} as const
