import { Layer } from "effect"
import { areaMemory } from "../Area.ts"
import { auditLogSuite } from "./AuditLogSuite.ts"
import { transactorSuite } from "../contract/TransactorSuite.ts"
import * as AuditLogMemory from "./AuditLogMemory.ts"
import * as TransactorMemory from "../memory/TransactorMemory.ts"

export const KernelAreaMemory = areaMemory({
  name: "kernel",
  stores: Layer.merge(AuditLogMemory.layer, TransactorMemory.layer),
  suites: [auditLogSuite, transactorSuite]
})
