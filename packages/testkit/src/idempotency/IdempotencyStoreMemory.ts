import { Idempotency } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, write } from "../memory/MemoryState.ts"

/** Keyed by user id and key. */
export const idempotencyRows = memoryTable("idempotency.keys", () => new Map<string, Idempotency.IdempotencyRecord>())

type Record = Idempotency.IdempotencyRecord

const keyOf = (userId: string, key: string): string => `${userId}\u0000${key}`

const update = (
  store: MemoryStore,
  userId: string,
  key: string,
  claimId: string,
  change: (row: Record) => Record | undefined
) =>
  write(store, (tables) => {
    const row = tables(idempotencyRows).get(keyOf(userId, key))
    if (row === undefined || row.claimId !== claimId || row.response !== null) return
    const next = change(row)
    if (next === undefined) tables(idempotencyRows).delete(keyOf(userId, key))
    else tables(idempotencyRows).set(keyOf(userId, key), next)
  })

export const make = (store: MemoryStore): Idempotency.IdempotencyStore["Service"] =>
  Idempotency.IdempotencyStore.of({
    claim: (input) =>
      write(store, (tables) => {
        for (const [id, row] of tables(idempotencyRows)) {
          if (row.expiresAt <= input.now) tables(idempotencyRows).delete(id)
        }
        const held = tables(idempotencyRows).get(keyOf(input.userId, input.key))
        if (held !== undefined && !(held.response === null && held.leaseUntil <= input.now)) {
          return Option.some(held)
        }
        tables(idempotencyRows).set(keyOf(input.userId, input.key), {
          userId: input.userId,
          key: input.key,
          method: input.method,
          path: input.path,
          claimId: input.claimId,
          leaseUntil: input.leaseUntil,
          bodySha256: null,
          response: null,
          createdAt: input.now,
          expiresAt: input.expiresAt
        })
        return Option.none()
      }),
    renew: (userId, key, claimId, leaseUntil) => update(store, userId, key, claimId, (row) => ({ ...row, leaseUntil })),
    complete: (userId, key, claimId, { bodySha256, response }) =>
      update(store, userId, key, claimId, (row) => ({ ...row, bodySha256, response })),
    release: (userId, key, claimId) => update(store, userId, key, claimId, () => undefined)
  })

export const layer: Layer.Layer<Idempotency.IdempotencyStore, never, MemoryState> = Layer.effect(
  Idempotency.IdempotencyStore,
  Effect.map(Effect.service(MemoryState), make)
)
