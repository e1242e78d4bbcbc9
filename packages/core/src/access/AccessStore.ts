import { Context, Effect, Option } from "effect"
import type { AccessCodeRow, AccessHost, AccessPolicyRow } from "./AccessPolicy.ts"
import type { AccessMode } from "./AccessRules.ts"
import type { ProjectId } from "../kernel/Ids.ts"

/** Access policies, bypass hashes and one-time codes per project; a code is taken (read and removed) at most once. */
export class AccessStore extends Context.Service<
  AccessStore,
  {
    /** None for a project that never set a policy. */
    readonly findPolicy: (projectId: ProjectId) => Effect.Effect<Option.Option<AccessPolicyRow>>
    /**
     * Sets the mode, and the password hash when `passwordHash` is not null (null keeps the stored one), raising the
     * password generation by one; creates the row, without a bypass, when the project has none. Answers the stored row.
     */
    readonly setPolicy: (
      projectId: ProjectId,
      mode: AccessMode,
      passwordHash: string | null,
      at: string
    ) => Effect.Effect<AccessPolicyRow>
    /** Replaces the bypass hash (null clears it); a new hash on a project without a row creates a `public` one. */
    readonly setBypass: (projectId: ProjectId, bypassHash: string | null, at: string) => Effect.Effect<void>
    readonly insertCode: (code: AccessCodeRow) => Effect.Effect<void>
    /**
     * Removes the code issued for `host` and answers it: of concurrent calls for one code at most one gets it. A code
     * presented at another host is left as it is, so a wrong host cannot burn a code for its own.
     */
    readonly takeCode: (codeHash: string, host: string) => Effect.Effect<Option.Option<AccessCodeRow>>
    /** Removes every code that expires at or before `at`. */
    readonly purgeCodes: (at: string) => Effect.Effect<void>
    /** The `active` hostname `name` (lowercase, no trailing dot) with its project; none if unknown or still pending. */
    readonly findActiveHost: (name: string) => Effect.Effect<Option.Option<AccessHost>>
  }
>()("@hostplane/core/access/AccessStore") {}
