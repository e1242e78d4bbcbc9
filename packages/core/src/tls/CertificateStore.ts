import { Context, Effect, Option, Schema, Scope } from "effect"
import type { AccountRow, CertificateRow, ServedRow } from "./Certificate.ts"

/** A certificate change feed was lost (a dropped connection): the listener subscribes again and reloads everything. */
export class CertificateFeedLost extends Schema.TaggedError<CertificateFeedLost>()("CertificateFeedLost", {
  message: Schema.String
}) {}

/** A subscription to certificate changes; `next` waits for at least one and answers the names changed since. */
export interface CertificateFeed {
  readonly next: Effect.Effect<ReadonlyArray<string>, CertificateFeedLost>
}

/**
 * Certificates, the ACME account and the HTTP-01 challenges in flight, in the control database so every replica
 * serves the same (decisions.md part 16). Private keys are stored sealed. Every certificate change (a write, a
 * removal, the hostname's removal) is announced to `watch` subscribers once it commits.
 */
export class CertificateStore extends Context.Service<
  CertificateStore,
  {
    readonly find: (name: string) => Effect.Effect<Option.Option<CertificateRow>>
    /** Every certificate that can be served. */
    readonly served: Effect.Effect<ReadonlyArray<ServedRow>>
    /**
     * Active hostnames needing an attempt at `now`: without a row, with an unserved row whose `retryAt` is null or
     * past, or with a certificate expiring by `renewBy`. Oldest need first, at most `limit`.
     */
    readonly due: (now: string, renewBy: string, limit: number) => Effect.Effect<ReadonlyArray<string>>
    /** Inserts or replaces the row of `row.name`. */
    readonly put: (row: CertificateRow) => Effect.Effect<void>
    readonly remove: (name: string) => Effect.Effect<void>
    /** Removes the rows of names that are no longer active hostnames; answers the names removed. */
    readonly removeOrphans: Effect.Effect<ReadonlyArray<string>>
    readonly account: Effect.Effect<Option.Option<AccountRow>>
    /** Stores the account unless one exists, and answers the one stored (two replicas may race to create it). */
    readonly claimAccount: (row: AccountRow) => Effect.Effect<AccountRow>
    /** Records the account's URL at the CA once registered. */
    readonly setAccountUrl: (url: string) => Effect.Effect<void>
    readonly putChallenge: (token: string, keyAuthorization: string, at: string) => Effect.Effect<void>
    readonly challenge: (token: string) => Effect.Effect<Option.Option<string>>
    readonly removeChallenge: (token: string) => Effect.Effect<void>
    /** Subscribes to changes; changes committed after this answers are seen by `next`. */
    readonly watch: Effect.Effect<CertificateFeed, CertificateFeedLost, Scope.Scope>
  }
>()("@hostplane/core/tls/CertificateStore") {}
