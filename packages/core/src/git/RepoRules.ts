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
