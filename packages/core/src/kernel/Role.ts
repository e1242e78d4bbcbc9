import { Schema } from "effect"

/** Org roles, ordered viewer < member < admin (spec part 1.3). */
export const Role = Schema.Literals(["viewer", "member", "admin"])
export type Role = typeof Role.Type

const rank: Record<Role, number> = { viewer: 0, member: 1, admin: 2 }

/** True when `role` is `minimum` or higher. */
export const atLeast = (role: Role, minimum: Role): boolean => rank[role] >= rank[minimum]

/** The roles a rule with this minimum accepts, lowest first. */
export const rolesFrom = (minimum: Role): ReadonlyArray<Role> => Role.literals.filter((role) => atLeast(role, minimum))
