import { Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

export const auditEvents = memoryTable("kernel.audit", (): Array<Kernel.AuditEvent> => [])

/** `AuditLog` on the shared memory state: append-only, listed in the order recorded, untouched by org removal. */
export const make = (store: MemoryStore): Kernel.AuditLog["Service"] =>
  Kernel.AuditLog.of({
    record: (event) =>
      write(store, (tables) => {
        tables(auditEvents).push(
          Object.freeze({
            action: event.action,
            orgId: event.orgId,
            actorId: event.actorId,
            target: event.target,
            data: structuredClone(event.data),
            at: event.at
          })
        )
      }),
    list: (filter) =>
      read(store, (tables) =>
        tables(auditEvents).filter(
          (event) =>
            (filter.orgId === undefined || event.orgId === filter.orgId) &&
            (filter.action === undefined || event.action === filter.action)
        )
      )
  })

export const layer: Layer.Layer<Kernel.AuditLog, never, MemoryState> = Layer.effect(
  Kernel.AuditLog,
  Effect.map(MemoryState, make)
)
