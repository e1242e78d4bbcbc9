import { Operations } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, read, write } from "./MemoryState.ts"

const update = (store: MemoryStore, opId: string, patch: Partial<Operations.OperationRow>) =>
  write(store, (tables) => {
    const row = tables.operations.get(opId)
    if (row !== undefined) tables.operations.set(opId, { ...row, ...patch })
  })

export const make = (store: MemoryStore): Operations.OperationStore["Service"] =>
  Operations.OperationStore.of({
    insert: (row) => write(store, (tables) => void tables.operations.set(row.id, row)),
    get: (opId) => read(store, (tables) => Option.fromNullishOr(tables.operations.get(opId))),
    findRunning: (projectId, kind) =>
      read(store, (tables) =>
        Option.fromNullishOr(
          [...tables.operations.values()].find(
            (row) => row.projectId === projectId && row.kind === kind && row.terminalCode === null
          )
        )
      ),
    claim: (now, leaseUntil, limit) =>
      write(store, (tables) => {
        const due = [...tables.operations.values()]
          .filter((row) => row.terminalCode === null && row.nextRunAt <= now)
          .sort((a, b) => (a.nextRunAt < b.nextRunAt ? -1 : a.nextRunAt > b.nextRunAt ? 1 : 0))
          .slice(0, limit)
          .map((row) => ({ ...row, attempts: row.attempts + 1, nextRunAt: leaseUntil }))
        for (const row of due) tables.operations.set(row.id, row)
        return due
      }),
    advance: (opId, phase, at) => update(store, opId, { phase, updatedAt: at }),
    finish: (opId, code, at) => update(store, opId, { terminalCode: code, updatedAt: at }),
    retryLater: (opId, error, nextRunAt, at) => update(store, opId, { lastError: error, nextRunAt, updatedAt: at })
  })

export const layer: Layer.Layer<Operations.OperationStore, never, MemoryState> = Layer.effect(
  Operations.OperationStore,
  Effect.map(Effect.service(MemoryState), make)
)
