import * as Rule from "../kernel/Rule.ts"

/** Spec 4.6's database of a project. A restore or delete sees a project being deleted, to answer 409 `suspended`. */
export const databaseRules = {
  status: Rule.project("viewer"),
  create: Rule.project("member"),
  connect: Rule.project("member"),
  endpoint: Rule.project("viewer"),
  tokens: Rule.project("member"),
  createToken: Rule.project("member"),
  deleteToken: Rule.project("member"),
  export: Rule.project("member"),
  generations: Rule.project("member"),
  restore: Rule.project("admin", { deleting: "allow" }),
  remove: Rule.project("admin", { deleting: "allow" }),
  operation: Rule.project("member"),
  abort: Rule.project("admin")
} as const
