import { atLeast, type Role } from "./Role.ts"

// Imports nothing but the roles: `@hostplane/api` carries these objects on its endpoints, and a browser loads it.

/** An operation on an org (`/v1/orgs/{orgSlug}/...`): a member with at least `minimum`. */
export interface OrgRule {
  readonly _tag: "OrgRule"
  readonly minimum: Role
}

/**
 * How a project write treats a project whose delete is accepted: `refuse` answers 409 `op_in_flight` once authorized,
 * `atWrite` lets the operation check its input first and refuses under the org lock (decisions.md part 12: 400
 * before 409), `allow` lets the change see it.
 */
export type Deleting = "refuse" | "allow" | "atWrite"

/** An operation on a project of an org (`.../projects/{projectName}/...`): the org rule, and the project must exist. */
export interface ProjectRule {
  readonly _tag: "ProjectRule"
  readonly minimum: Role
  readonly deleting: Deleting
}

/**
 * Who may run one operation, written once: the core service authorizes with this object, and the HTTP endpoint
 * carries the same object, so the API authorizes before it reads the input and documents the role from it.
 */
export type Rule = OrgRule | ProjectRule

/** The rule of an org operation. */
export const org = (minimum: Role): OrgRule => ({ _tag: "OrgRule", minimum })

/** The rule of a project operation; a project being deleted is refused at once unless `deleting` says otherwise. */
export const project = (minimum: Role, options: { readonly deleting?: Deleting } = {}): ProjectRule => ({
  _tag: "ProjectRule",
  minimum,
  deleting: options.deleting ?? "refuse"
})

/**
 * An org operation on one member's record whose rule depends on whether that member is the caller: `self` when the
 * path's `param` names the caller (leaving an org), `others` otherwise. The API and the service each pick the branch
 * with `forSubject`, so both authorize with the same plain rule object.
 */
export interface SubjectRule {
  readonly _tag: "SubjectRule"
  readonly param: string
  readonly self: OrgRule
  readonly others: OrgRule
}

/** What an endpoint declares: one rule, or the choice its path's subject makes. */
export type Declared = Rule | SubjectRule

/** The rule of an operation on the record `param` names: `self` for the caller's own, `others` for anyone else's. */
export const bySubject = (param: string, rules: { readonly self: OrgRule; readonly others: OrgRule }): SubjectRule => ({
  _tag: "SubjectRule",
  param,
  self: rules.self,
  others: rules.others
})

/** The branch of a subject rule for a request whose subject is (or is not) the caller. */
export const forSubject = (rule: SubjectRule, isCaller: boolean): OrgRule => (isCaller ? rule.self : rule.others)

export const isRule = (value: unknown): value is Rule =>
  typeof value === "object" &&
  value !== null &&
  ((value as Rule)._tag === "OrgRule" || (value as Rule)._tag === "ProjectRule")

export const isDeclared = (value: unknown): value is Declared =>
  isRule(value) || (typeof value === "object" && value !== null && (value as SubjectRule)._tag === "SubjectRule")

/** True when a caller with `role` passes the rule's role check. */
export const allows = (rule: Rule, role: Role): boolean => atLeast(role, rule.minimum)

const minimumText = (minimum: Role): string =>
  minimum === "admin" ? "Admin" : minimum === "member" ? "Member or higher" : "Viewer or higher"

/**
 * The role sentence the API documents for a rule ("Admin.", "Member or higher."; for a subject rule, both branches:
 * "Admin; viewer or higher when `{userId}` is the caller.").
 */
export const roleText = (rule: Declared): string =>
  rule._tag === "SubjectRule"
    ? `${minimumText(rule.others.minimum)}; ${minimumText(rule.self.minimum).toLowerCase()} when \`{${rule.param}}\` is the caller.`
    : `${minimumText(rule.minimum)}.`
