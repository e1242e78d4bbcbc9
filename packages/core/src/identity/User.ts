import { Schema } from "effect"
import { OrgMembership } from "../orgs/Org.ts"
import { UserId } from "../kernel/Ids.ts"

export const User = Schema.Struct({
  id: UserId,
  provider: Schema.String,
  subject: Schema.String,
  email: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String)
})
export type User = typeof User.Type

/** A signed-in session as returned to the client; the token is shown only here. */
export const Session = Schema.Struct({
  token: Schema.String,
  expiresAt: Schema.String,
  userId: Schema.String,
  subject: Schema.String
})
export type Session = typeof Session.Type

export const Me = Schema.Struct({ user: User, orgs: Schema.Array(OrgMembership) })
export type Me = typeof Me.Type

export const DevLoginInput = Schema.Struct({
  subject: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  email: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(320))),
  name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200)))
})
export type DevLoginInput = typeof DevLoginInput.Type

/** What an identity provider vouches for after a successful sign-in. */
export interface VerifiedIdentity {
  readonly provider: string
  readonly subject: string
  readonly email: string | null
  readonly name: string | null
}

/** The display names of this deployment (`GET /v1/config`); no feature switches. */
export const SiteConfig = Schema.Struct({
  productName: Schema.String,
  publicUrl: Schema.String,
  appDomain: Schema.String,
  nameservers: Schema.Array(Schema.String),
  /** Where a browser opens a project's hostname, `{host}` standing for it (`https://{host}/`). */
  siteUrl: Schema.String
})
export type SiteConfig = typeof SiteConfig.Type
