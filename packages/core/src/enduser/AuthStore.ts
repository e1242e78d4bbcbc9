import { Context, type Effect, type Option } from "effect"
import type { ProjectId } from "../kernel/Ids.ts"
import type { AuthGrantRow, AuthProviderName, AuthProviderRow } from "./EndUserAuth.ts"

/** The control rows of end-user sign-in: a project's grant with its settings, and its providers (secrets sealed). */
export class AuthStore extends Context.Service<
  AuthStore,
  {
    readonly find: (projectId: ProjectId) => Effect.Effect<Option.Option<AuthGrantRow>>
    /** Inserts or replaces the grant row. */
    readonly save: (row: AuthGrantRow) => Effect.Effect<void>
    /** Deletes the grant and its providers; false when there was no grant. */
    readonly remove: (projectId: ProjectId) => Effect.Effect<boolean>
    readonly providers: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<AuthProviderRow>>
    /** Inserts or replaces the provider's row (rotation is the same call). */
    readonly putProvider: (row: AuthProviderRow) => Effect.Effect<void>
    /** False when the project had no such provider. */
    readonly removeProvider: (projectId: ProjectId, provider: AuthProviderName) => Effect.Effect<boolean>
  }
>()("@hostplane/core/enduser/AuthStore") {}
