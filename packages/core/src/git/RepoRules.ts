import * as Rule from "../kernel/Rule.ts"

/** Spec 4.12's repositories of a project, their browsing and ref history. */
export const repoRules = {
  list: Rule.project("viewer"),
  create: Rule.project("member"),
  get: Rule.project("viewer"),
  update: Rule.project("admin"),
  remove: Rule.project("admin"),
  refUpdates: Rule.project("viewer"),
  refs: Rule.project("viewer"),
  tree: Rule.project("viewer"),
  blob: Rule.project("viewer"),
  commits: Rule.project("viewer")
} as const

/**
 * Git over smart HTTP and SSH, by the transport's direction: reading (fetch, clone) and pushing. Beside the role, a
 * public repo is readable by anyone, and a non-member of it is told 403 rather than 404.
 */
export const transportRules = {
  read: Rule.project("viewer"),
  write: Rule.project("member")
} as const
