import { Ai } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, write } from "../memory/MemoryState.ts"
import { appendLedgerRow } from "./CreditStoreMemory.ts"

interface CallRow extends Ai.AiCallStart {
  readonly charged: boolean
}

/** Keyed by call id. */
export const aiCallRows = memoryTable("ai.calls", () => new Map<string, CallRow>())

/** `AiCallStore` on the shared memory state: each method is one synchronous write, so it is atomic. */
export const make = (store: MemoryStore): Ai.AiCallStore["Service"] =>
  Ai.AiCallStore.of({
    start: (call) =>
      write(store, (tables) => {
        const rows = tables(aiCallRows)
        const recent = [...rows.values()].filter(
          (row) => row.projectId === call.projectId && row.at > call.windowStart
        ).length
        if (call.perMinute > 0 && recent >= call.perMinute) return false
        rows.set(call.id, { ...call, charged: false })
        return true
      }),
    abandon: (callId) =>
      write(store, (tables) => {
        if (tables(aiCallRows).get(callId)?.charged === false) tables(aiCallRows).delete(callId)
      }),
    charge: (callId, charge) =>
      write(store, (tables) => {
        const call = tables(aiCallRows).get(callId)
        if (call === undefined || call.charged) return Option.none()
        tables(aiCallRows).set(callId, { ...call, charged: true })
        return Option.some(
          appendLedgerRow(tables, {
            orgId: call.orgId,
            kind: "call",
            amountMicroCents: -charge.costMicroCents,
            projectName: call.projectName,
            model: call.model,
            at: charge.at
          })
        )
      })
  })

export const layer: Layer.Layer<Ai.AiCallStore, never, MemoryState> = Layer.effect(
  Ai.AiCallStore,
  Effect.map(MemoryState, make)
)
