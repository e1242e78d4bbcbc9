import * as Rule from "../kernel/Rule.ts"

/** Spec 4.9's settings and providers of the auth add-on. */
export const endUserRules = {
  settings: Rule.project("member"),
  // A bad provider or body is 400 before a project being deleted is 409 (decisions.md part 12): refused at the write.
  putProvider: Rule.project("admin", { deleting: "atWrite" }),
  deleteProvider: Rule.project("admin")
} as const
