import * as Rule from "../kernel/Rule.ts"

/** A project's runtime logs, listed and followed (decisions.md part 13: member). */
export const logsRules = {
  list: Rule.project("member"),
  stream: Rule.project("member")
} as const
