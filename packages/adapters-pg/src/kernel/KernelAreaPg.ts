import { Layer } from "effect"
import createNodeRevisions from "./migrations/0001_create_node_revisions.ts"
import addEnvelopeLock from "./migrations/0002_add_envelope_lock.ts"
import notifyNodeRevision from "./migrations/0003_notify_node_revision.ts"
import { areaPg } from "../Area.ts"
import * as AuditLogPg from "./AuditLogPg.ts"
import * as EnvelopeStorePg from "./EnvelopeStorePg.ts"
import * as NodeRevisionsPg from "./NodeRevisionsPg.ts"
import * as TransactorPg from "./TransactorPg.ts"

/** The audit log, the transaction, the node revision and the write envelope's fused statements; the audit table is created with the mail outbox (mail/0001). */
export const KernelAreaPg = areaPg({
  name: "kernel",
  stores: Layer.mergeAll(AuditLogPg.layer, TransactorPg.layer, NodeRevisionsPg.layer, EnvelopeStorePg.layer),
  migrations: {
    "0001_create_node_revisions": createNodeRevisions,
    "0002_add_envelope_lock": addEnvelopeLock,
    "0003_notify_node_revision": notifyNodeRevision
  }
})
