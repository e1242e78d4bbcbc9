import { Context, Effect, Layer } from "effect"
import type { ArtifactStoreUnavailable, InvalidBundle } from "../errors/Errors.ts"
import type { Digest } from "./ArtifactStore.ts"
import type { Manifest } from "./Manifest.ts"

/**
 * Loads an accepted bundle's worker in the runtime before it becomes a deployment (decisions.md part 13): an entry
 * that does not load (a syntax error, no default export with `fetch`) is 400 `invalid_bundle` with `details.reason`
 * `worker_invalid` and the runtime's message in `details.message`. A host without a runtime (or with it off)
 * provides `WorkerCheck.off` and the check is skipped; a bundle without a worker passes.
 */
export class WorkerCheck extends Context.Service<
  WorkerCheck,
  {
    readonly check: (
      digest: Digest,
      manifest: Manifest
    ) => Effect.Effect<void, InvalidBundle | ArtifactStoreUnavailable>
  }
>()("@hostplane/core/deployments/WorkerCheck") {
  /** No worker runtime: every bundle passes unchecked. */
  static readonly off: Layer.Layer<WorkerCheck> = Layer.succeed(WorkerCheck, { check: () => Effect.void })
}
