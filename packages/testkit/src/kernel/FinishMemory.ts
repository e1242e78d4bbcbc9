import type { Kernel } from "@hostplane/core"
import { Effect } from "effect"
import type { MemoryStore } from "../memory/MemoryState.ts"
import * as AuditLogMemory from "./AuditLogMemory.ts"
import * as NodeRevisionsMemory from "./NodeRevisionsMemory.ts"

/**
 * The write envelope's last writes on the memory state, the audit row and the revision raise: `EnvelopeStore.finish`,
 * and a store write that carries the envelope's `Finish`. Apart from `EnvelopeStoreMemory`, so that area stores can
 * use it without importing the org and project stores.
 */
export const recordFinish = (store: MemoryStore, finish: Kernel.Finish | undefined): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (finish?.audit !== undefined) yield* AuditLogMemory.make(store).record(finish.audit)
    if (finish?.raise !== undefined) yield* NodeRevisionsMemory.make(store).raise(finish.raise)
  })
