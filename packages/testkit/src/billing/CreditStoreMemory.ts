import { Ai } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, type Tables, write } from "../memory/MemoryState.ts"

/** Keyed by org id. */
export const creditRows = memoryTable("ai.credit", () => new Map<string, Ai.CreditRow>())
/** Every org's ledger rows in `ledger_id` order. */
export const ledgerRows = memoryTable("ai.ledger", () => new Array<Ai.LedgerRow & { readonly orgId: string }>())

/** Appends a ledger row and moves the balance, inside the caller's `write`; answers the new balance. */
export const appendLedgerRow = (tables: Tables, entry: Ai.LedgerEntry): number => {
  const credit = tables(creditRows).get(entry.orgId) ?? Ai.zeroCredit(entry.orgId)
  const balanceMicroCents = credit.balanceMicroCents + entry.amountMicroCents
  tables(ledgerRows).push({
    orgId: entry.orgId,
    ledger_id: tables(ledgerRows).length + 1,
    kind: entry.kind,
    amountMicroCents: entry.amountMicroCents,
    projectName: entry.projectName,
    model: entry.model,
    createdAt: entry.at
  })
  tables(creditRows).set(entry.orgId, { ...credit, balanceMicroCents })
  return balanceMicroCents
}

/** `CreditStore` on the shared memory state: the ledger is an array in id order, the balance moves with each row. */
export const make = (store: MemoryStore): Ai.CreditStore["Service"] =>
  Ai.CreditStore.of({
    find: (orgId) => read(store, (tables) => tables(creditRows).get(orgId) ?? Ai.zeroCredit(orgId)),
    append: (entry) => write(store, (tables) => appendLedgerRow(tables, entry)),
    setPaymentMethod: (orgId) =>
      write(store, (tables) => {
        tables(creditRows).set(orgId, {
          ...(tables(creditRows).get(orgId) ?? Ai.zeroCredit(orgId)),
          hasPaymentMethod: true
        })
      }),
    setAutoTopup: (orgId, autoTopup) =>
      write(store, (tables) => {
        tables(creditRows).set(orgId, { ...(tables(creditRows).get(orgId) ?? Ai.zeroCredit(orgId)), autoTopup })
      }),
    claimAutoTopup: (orgId, day, perDay) =>
      write(store, (tables) => {
        const credit = tables(creditRows).get(orgId) ?? Ai.zeroCredit(orgId)
        const count = Ai.autoTopupsOn(credit, day)
        if (count >= perDay) return false
        tables(creditRows).set(orgId, { ...credit, autoTopupDay: day, autoTopupsOnDay: count + 1 })
        return true
      }),
    spentSince: (orgId, since) =>
      read(store, (tables) =>
        tables(ledgerRows)
          .filter((row) => row.orgId === orgId && row.kind === "call" && row.createdAt >= since)
          .reduce((spent, row) => spent - row.amountMicroCents, 0)
      ),
    ledger: (orgId, limit, before) =>
      read(store, (tables) =>
        tables(ledgerRows)
          .filter((row) => row.orgId === orgId && (before === undefined || row.ledger_id < before))
          .reverse()
          .slice(0, limit)
          .map(({ orgId: _, ...row }) => row)
      )
  })

export const layer: Layer.Layer<Ai.CreditStore, never, MemoryState> = Layer.effect(
  Ai.CreditStore,
  Effect.map(MemoryState, make)
)
