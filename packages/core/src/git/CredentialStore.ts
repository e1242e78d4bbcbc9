import { Context, type Effect, type Option } from "effect"
import type { SshKeyExists } from "../errors/Errors.ts"
import type { AccessTokenId, SshKeyId, UserId } from "../kernel/Ids.ts"
import type { AccessTokenRow, SshKeyRow } from "./Credentials.ts"

/** Personal access tokens (by the SHA-256 of the plaintext) and SSH keys (fingerprints globally unique). */
export class CredentialStore extends Context.Service<
  CredentialStore,
  {
    readonly listTokens: (userId: UserId) => Effect.Effect<ReadonlyArray<AccessTokenRow>>
    readonly insertToken: (row: AccessTokenRow) => Effect.Effect<void>
    readonly findTokenByHash: (tokenHash: string) => Effect.Effect<Option.Option<AccessTokenRow>>
    /** Sets `revokedAt` unless already set; false when the user has no such token. */
    readonly revokeToken: (userId: UserId, id: AccessTokenId, at: string) => Effect.Effect<boolean>
    /** Sets `lastUsedAt` to `at` when it is older than `staleBefore` (or unset): at most one write a minute. */
    readonly touchToken: (id: AccessTokenId, at: string, staleBefore: string) => Effect.Effect<void>
    readonly listKeys: (userId: UserId) => Effect.Effect<ReadonlyArray<SshKeyRow>>
    readonly insertKey: (row: SshKeyRow) => Effect.Effect<void, SshKeyExists>
    readonly findKeyByFingerprint: (fingerprint: string) => Effect.Effect<Option.Option<SshKeyRow>>
    /** False when the user has no such key. */
    readonly removeKey: (userId: UserId, id: SshKeyId) => Effect.Effect<boolean>
  }
>()("@hostplane/core/git/CredentialStore") {}
