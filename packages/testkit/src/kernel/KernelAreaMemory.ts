import { Layer } from "effect"
import { areaMemory } from "../Area.ts"
import { auditLogSuite } from "./AuditLogSuite.ts"
import { nodeRevisionsSuite } from "./NodeRevisionsSuite.ts"
import { transactorSuite } from "../contract/TransactorSuite.ts"
import * as AuditLogMemory from "./AuditLogMemory.ts"
import * as EnvelopeStoreMemory from "./EnvelopeStoreMemory.ts"
import { envelopeStoreSuite } from "./EnvelopeStoreSuite.ts"
import * as TransactorMemory from "../memory/TransactorMemory.ts"
import * as NodeRevisionsMemory from "./NodeRevisionsMemory.ts"

export const KernelAreaMemory = areaMemory({
  name: "kernel",
  stores: Layer.mergeAll(
    AuditLogMemory.layer,
    TransactorMemory.layer,
    NodeRevisionsMemory.layer,
    EnvelopeStoreMemory.layer
  ),
  suites: [auditLogSuite, transactorSuite, nodeRevisionsSuite, envelopeStoreSuite]
})
