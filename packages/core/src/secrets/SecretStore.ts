import { Context, Effect } from "effect"
import type { SecretMeta, SecretRow } from "./Secret.ts"
import type { Sealed } from "./Sealer.ts"

/** Project secrets, unique by name (case-sensitive) in a project; values are stored sealed only. */
export class SecretStore extends Context.Service<
  SecretStore,
  {
    /** The project's secrets by name, without their values. */
    readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<SecretMeta>>
    /**
     * Stores `sealed` under `name` in one atomic step: version 1 for a name the project does not hold, otherwise the
     * stored version plus one, so concurrent puts get distinct versions.
     */
    readonly put: (projectId: string, name: string, sealed: Sealed, at: string) => Effect.Effect<SecretMeta>
    /** Removes the secret; false when the project holds no such name. */
    readonly remove: (projectId: string, name: string) => Effect.Effect<boolean>
    /** Every secret of the project with its sealed value, by name. */
    readonly listSealed: (projectId: string) => Effect.Effect<ReadonlyArray<SecretRow>>
  }
>()("@hostplane/core/secrets/SecretStore") {}
