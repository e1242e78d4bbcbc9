import { Layer } from "effect"
import { areaPg } from "../Area.ts"
import * as AuditLogPg from "./AuditLogPg.ts"
import * as TransactorPg from "./TransactorPg.ts"

/** The audit log and the transaction; the audit table is created with the mail outbox (0002). */
export const KernelAreaPg = areaPg({
  name: "kernel",
  stores: Layer.merge(AuditLogPg.layer, TransactorPg.layer),
  migrations: {}
})
