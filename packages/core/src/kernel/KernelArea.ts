import { Layer } from "effect"
import { area } from "../Area.ts"
import { AuditLog } from "./Audit.ts"
import { EnvelopeStore } from "./EnvelopeStore.ts"
import { NodeRevisions } from "./NodeRevisions.ts"
import { Transactor } from "./Transactor.ts"

/**
 * The audit log, the shared transaction every write runs in, the node revision and the write envelope's fused
 * statements; Policy and Tokens sit beneath
 * every area.
 */
export const KernelArea = area({
  name: "kernel",
  stores: [AuditLog, Transactor, NodeRevisions, EnvelopeStore],
  services: Layer.empty
})
