import { Duration, Schema } from "effect"
import type { Role } from "../kernel/Role.ts"
import * as Rule from "../kernel/Rule.ts"
import { accessByHostRules } from "./AccessPolicyRules.ts"
import { AccessMode, NextPath } from "./AccessRules.ts"
import { OrgId, ProjectId, UserId } from "../kernel/Ids.ts"
import type {} from "../kernel/Ids.ts"

/** AccessPolicy: never carries the password or the bypass secret, only whether each is set. */
export const AccessPolicy = Schema.Struct({
  mode: AccessMode,
  hasPassword: Schema.Boolean,
  hasBypass: Schema.Boolean
})
export type AccessPolicy = typeof AccessPolicy.Type

/** The policy of a project that never set one (spec 4.11): public, not 404. */
export const defaultAccessPolicy: AccessPolicy = { mode: "public", hasPassword: false, hasBypass: false }

/** AccessBypass: the bypass secret, in the one response that issues it. */
export const AccessBypass = Schema.Struct({ secret: Schema.String })
export type AccessBypass = typeof AccessBypass.Type

/** `POST /v1/access/authorize` body: the hostname to enter and the path to land on there. */
export const AuthorizeInput = Schema.Struct({
  to: Schema.String.check(Schema.isMaxLength(1024)),
  next: NextPath
})
export type AuthorizeInput = typeof AuthorizeInput.Type

/** AccessAuthorize: the edge callback URL carrying a one-time code. */
export const AccessAuthorize = Schema.Struct({ url: Schema.String })
export type AccessAuthorize = typeof AccessAuthorize.Type

/** The header CI sends the bypass secret in (spec 4.11). */
export const bypassHeader = "Service-Access-Bypass"

/** The path on the deployment's own host that takes the one-time code: `https://<host><callbackPath>?code=..&next=..`. */
export const callbackPath = "/__service/access/callback"

/** How long a one-time code from `authorize` may be exchanged (decisions.md part 4). */
export const codeTtl = Duration.seconds(60)

/** The stored policy of a project; the password only as its scrypt hash, the bypass secret only as its SHA-256. */
export const AccessPolicyRow = Schema.Struct({
  projectId: ProjectId,
  mode: AccessMode,
  passwordHash: Schema.NullOr(Schema.String),
  /** Raised by every new password (0 before the first): passes earned under an older one no longer admit. */
  passwordGeneration: Schema.Int,
  bypassHash: Schema.NullOr(Schema.String),
  updatedAt: Schema.String
})
export type AccessPolicyRow = typeof AccessPolicyRow.Type

export const toAccessPolicy = (row: AccessPolicyRow): AccessPolicy => ({
  mode: row.mode,
  hasPassword: row.passwordHash !== null,
  hasBypass: row.bypassHash !== null
})

/** A one-time code of `authorize`, stored by its SHA-256 and bound to the hostname it was issued for. */
export const AccessCodeRow = Schema.Struct({
  codeHash: Schema.String,
  host: Schema.String,
  projectId: ProjectId,
  orgId: OrgId,
  userId: UserId,
  expiresAt: Schema.String,
  createdAt: Schema.String
})
export type AccessCodeRow = typeof AccessCodeRow.Type

/** An active hostname and the project it routes to. */
export const AccessHost = Schema.Struct({ name: Schema.String, projectId: ProjectId, orgId: OrgId })
export type AccessHost = typeof AccessHost.Type

/** Who a one-time code was issued to, as the edge learns it from `exchangeCode`. */
export interface AccessGrant {
  readonly userId: UserId
  readonly projectId: ProjectId
  readonly orgId: OrgId
  /** The user's role in the owning org at the time of the exchange. */
  readonly role: Role
}

/**
 * Whether a signed-in org user with `role` may open a deployment under `mode`: `public` admits everyone, `org`
 * admits the owning org's roles `accessByHostRules.open` allows (spec 4.11: member or higher), `password` admits only the shared password or the bypass.
 */
export const admitsRole = (mode: AccessMode, role: Role): boolean =>
  mode === "public" || (mode === "org" && Rule.allows(accessByHostRules.open, role))
