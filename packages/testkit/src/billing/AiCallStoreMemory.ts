import { Ai } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { isLiveOwner } from "../jobs/JobStoreMemory.ts"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"
import { appendLedgerRow } from "./CreditStoreMemory.ts"

interface CallRow extends Ai.AiCallStart {
  readonly charged: boolean
  readonly outputChars: number
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
        rows.set(call.id, { ...call, charged: false, outputChars: 0 })
        return true
      }),
    renew: (callId, leaseUntil, outputChars) =>
      write(store, (tables) => {
        const call = tables(aiCallRows).get(callId)
        if (call === undefined || call.charged) return false
        tables(aiCallRows).set(callId, { ...call, leaseUntil, outputChars })
        return true
      }),
    orphans: (now, limit) =>
      read(store, (tables) =>
        [...tables(aiCallRows).values()]
          .filter((row) => !row.charged && (row.leaseUntil <= now || !isLiveOwner(store, row.owner)))
          .sort((a, b) => (a.at === b.at ? (a.id < b.id ? -1 : 1) : a.at < b.at ? -1 : 1))
          .slice(0, limit)
          .map((row) => ({
            id: row.id,
            orgId: row.orgId,
            model: row.model,
            inputEstimate: row.inputEstimate,
            outputChars: row.outputChars
          }))
      ),
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
