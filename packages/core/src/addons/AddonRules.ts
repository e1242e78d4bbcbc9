import * as Rule from "../kernel/Rule.ts"

/**
 * Every add-on's status, grant and revoke (spec 4.6-4.10). Grant and revoke see a project being deleted when
 * authorized: the add-on's availability (503) is checked first, and the write refuses it (409) under the lock.
 */
export const addonRules = {
  status: Rule.project("viewer"),
  grant: Rule.project("member", { deleting: "allow" }),
  revoke: Rule.project("admin", { deleting: "allow" })
} as const
