import { Layer } from "effect"
import { area } from "../Area.ts"
import { AuditLog } from "./Audit.ts"
import { NodeRevisions } from "./NodeRevisions.ts"
import { Transactor } from "./Transactor.ts"

/**
 * The audit log, the shared transaction every write runs in and the node revision; Policy and Tokens sit beneath
 * every area.
 */
export const KernelArea = area({
  name: "kernel",
  stores: [AuditLog, Transactor, NodeRevisions],
  services: Layer.empty
})
