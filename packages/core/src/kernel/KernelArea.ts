import { Layer } from "effect"
import { area } from "../Area.ts"
import { AuditLog } from "./Audit.ts"
import { Transactor } from "./Transactor.ts"

/** The audit log and the shared transaction every write runs in; Policy and Tokens sit beneath every area. */
export const KernelArea = area({ name: "kernel", stores: [AuditLog, Transactor], services: Layer.empty })
