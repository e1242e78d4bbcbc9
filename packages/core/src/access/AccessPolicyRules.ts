import * as Rule from "../kernel/Rule.ts"

/** A project's access policy of a project and its bypass secret. */
export const accessRules = {
  get: Rule.project("viewer"),
  set: Rule.project("admin", { deleting: "atWrite" }),
  newBypass: Rule.project("admin"),
  revokeBypass: Rule.project("admin")
} as const
