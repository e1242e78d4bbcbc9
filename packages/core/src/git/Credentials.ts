import { Schema } from "effect"
import { AccessTokenId, SshKeyId, UserId } from "../kernel/Ids.ts"
import { DisplayName, noControlCharacters } from "../orgs/Org.ts"

/** The fixed prefix of every personal access token (spec 4.12). */
export const accessTokenPrefix = "svc_pat_"

/**
 * Token create (decisions.md part 11): a name of 1..100 characters that people read (no control characters, as an
 * org's display name) and an optional expiry in the future.
 */
export const CreateAccessTokenInput = Schema.Struct({
  name: DisplayName,
  expiresAt: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type CreateAccessTokenInput = typeof CreateAccessTokenInput.Type

/** AccessToken as listed: never the token itself. */
export const AccessToken = Schema.Struct({
  id: AccessTokenId,
  name: Schema.String,
  createdAt: Schema.String,
  expiresAt: Schema.NullOr(Schema.String),
  lastUsedAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String)
})
export type AccessToken = typeof AccessToken.Type

/** AccessTokenCreated: the plaintext, shown once. */
export const AccessTokenCreated = Schema.Struct({
  id: AccessTokenId,
  name: Schema.String,
  token: Schema.String,
  createdAt: Schema.String,
  expiresAt: Schema.NullOr(Schema.String)
})
export type AccessTokenCreated = typeof AccessTokenCreated.Type

export const AccessTokenList = Schema.Struct({ items: Schema.Array(AccessToken) })

/** The stored token: only the SHA-256 of the plaintext. */
export interface AccessTokenRow extends AccessToken {
  readonly userId: UserId
  readonly tokenHash: string
}

/** The key types spec 4.12 allows, spelled as it lists them. */
export const SshKeyType = Schema.Literals([
  "ed25519",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "rsa"
])
export type SshKeyType = typeof SshKeyType.Type

/** SSH key create: one public key line (`<type> <base64> [comment]`, no options); the title defaults to the comment. */
export const AddSshKeyInput = Schema.Struct({
  publicKey: Schema.String.check(Schema.isMaxLength(16384)),
  title: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(200), noControlCharacters)))
})
export type AddSshKeyInput = typeof AddSshKeyInput.Type

export const SshKey = Schema.Struct({
  id: SshKeyId,
  title: Schema.String,
  type: SshKeyType,
  fingerprint: Schema.String,
  createdAt: Schema.String
})
export type SshKey = typeof SshKey.Type

export const SshKeyList = Schema.Struct({ items: Schema.Array(SshKey) })

/** The stored key: the fingerprint is globally unique. */
export interface SshKeyRow extends SshKey {
  readonly userId: UserId
  readonly publicKey: string
}
