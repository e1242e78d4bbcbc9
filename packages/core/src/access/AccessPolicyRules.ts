import * as Rule from "../kernel/Rule.ts"

/** A project's access policy of a project and its bypass secret. */
export const accessRules = {
  get: Rule.project("viewer"),
  set: Rule.project("admin", { deleting: "atWrite" }),
  newBypass: Rule.project("admin"),
  revokeBypass: Rule.project("admin")
} as const

/**
 * The access rules of an org reached through one of its hostnames rather than its slug (the org is no secret there,
 * so no membership and a low role are both 403): `authorize` issues a sign-in code for the host, `open` is who an
 * `org`-mode deployment admits.
 */
export const accessByHostRules = {
  authorize: Rule.org("viewer"),
  open: Rule.org("member")
} as const
