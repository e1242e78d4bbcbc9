import * as Rule from "../kernel/Rule.ts"

const entry = Rule.project("viewer")

/** Spec 4.8's mail log: the list, and one entry as JSON or as its raw message. */
export const emailRules = {
  log: Rule.project("viewer"),
  logEntry: entry,
  logRaw: entry
} as const
