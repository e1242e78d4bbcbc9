import { Schema } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"
import type { Sealed } from "../secrets/Sealer.ts"

/** The social providers of spec part 2, in the service's spelling (decisions.md part 4). */
export const authProviderNames = ["github", "google", "discord"] as const
export const AuthProviderName = Schema.Literals(authProviderNames)
export type AuthProviderName = typeof AuthProviderName.Type

export const isAuthProviderName = Schema.is(AuthProviderName)

/** How long an end-user session lasts, in days. */
export const SessionDays = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 365 }))

/** AuthSettings (decisions.md part 4): `sessionDays` 1..365, default 30; `allowSignups` default true. */
export const AuthSettings = Schema.Struct({
  sessionDays: SessionDays,
  allowSignups: Schema.Boolean
}).annotate({ identifier: "AuthSettings" })
export type AuthSettings = typeof AuthSettings.Type

export const defaultAuthSettings: AuthSettings = { sessionDays: 30, allowSignups: true }

/** AuthSettingsPatch: only the fields sent change. */
export const AuthSettingsPatch = Schema.Struct({
  sessionDays: Schema.optionalKey(SessionDays),
  allowSignups: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "AuthSettingsPatch" })
export type AuthSettingsPatch = typeof AuthSettingsPatch.Type

/**
 * AuthProviderPut. Both fields are checked by the service, not the schema: a missing or empty one is 400
 * `invalid_provider` (decisions.md part 12: the spec's code beats `bad_request`).
 */
export const AuthProviderPut = Schema.Struct({
  clientId: Schema.optionalKey(Schema.String),
  clientSecret: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "AuthProviderPut" })
export type AuthProviderPut = typeof AuthProviderPut.Type

/** A registered provider as the API and the node see it: never its secret. */
export const AuthProviderEntry = Schema.Struct({ provider: AuthProviderName, clientId: Schema.String })
export type AuthProviderEntry = typeof AuthProviderEntry.Type

/** AuthStatus (decisions.md part 4): `hosts` are the project's active hostnames, where callbacks point. */
export const AuthStatus = Schema.Struct({
  granted: Schema.Boolean,
  configured: Schema.Boolean,
  providers: Schema.Array(AuthProviderEntry),
  hosts: Schema.Array(Schema.String),
  settings: AuthSettings
}).annotate({ identifier: "AuthStatus" })
export type AuthStatus = typeof AuthStatus.Type

/** The node state's `auth` binding (decisions.md part 6). */
export const AuthBinding = Schema.Struct({ settings: AuthSettings, providers: Schema.Array(AuthProviderEntry) })
export type AuthBinding = typeof AuthBinding.Type

/** A project's grant: present while auth is on; a revoke deletes it, so the next grant starts at the defaults. */
export interface AuthGrantRow {
  readonly projectId: ProjectId
  readonly settings: AuthSettings
  readonly grantedAt: string
}

/** A registered provider with its client secret sealed (bound to the project and provider). */
export interface AuthProviderRow {
  readonly projectId: ProjectId
  readonly provider: AuthProviderName
  readonly clientId: string
  readonly sealedSecret: Sealed
  readonly updatedAt: string
}

/** The sealing context of a provider's client secret, so it opens only for that project and provider. */
export const clientSecretContext = (projectId: ProjectId, provider: AuthProviderName): string =>
  `${projectId}/auth/${provider}`

/** Provider entries in a stable order (the spec's). */
export const providerEntries = (rows: ReadonlyArray<AuthProviderRow>): ReadonlyArray<AuthProviderEntry> =>
  [...rows]
    .sort((a, b) => authProviderNames.indexOf(a.provider) - authProviderNames.indexOf(b.provider))
    .map((row) => ({ provider: row.provider, clientId: row.clientId }))
