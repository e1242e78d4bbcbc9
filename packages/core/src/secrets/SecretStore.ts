import { Context, Effect } from "effect"
import type { SecretMeta, SecretRow } from "./Secret.ts"
import type { Sealed } from "./Sealer.ts"
import type { EnvelopeRefused, Finish } from "../kernel/EnvelopeStore.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/** Project secrets, unique by name (case-sensitive) in a project; values are stored sealed only. */
export class SecretStore extends Context.Service<
  SecretStore,
  {
    /** The project's secrets by name, without their values. */
    readonly list: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<SecretMeta>>
    /**
     * Stores `sealed` under `name` in one atomic step: version 1 for a name the project does not hold, otherwise the
     * stored version plus one, so concurrent puts get distinct versions. With `finish` (the write envelope's,
     * `Mutation.projectStatement`) the same atomic step first takes the org lock and checks its guard, failing with
     * `EnvelopeRefused` and writing nothing when a check fails, then records its audit row and revision raise as
     * `EnvelopeStore.finish` records them.
     */
    readonly put: (
      projectId: ProjectId,
      name: string,
      sealed: Sealed,
      at: string,
      finish?: Finish
    ) => Effect.Effect<SecretMeta, EnvelopeRefused>
    /** Removes the secret; false when the project holds no such name. */
    readonly remove: (projectId: ProjectId, name: string) => Effect.Effect<boolean>
    /** Every secret of the project with its sealed value, by name. */
    readonly listSealed: (projectId: ProjectId) => Effect.Effect<ReadonlyArray<SecretRow>>
  }
>()("@hostplane/core/secrets/SecretStore") {}
