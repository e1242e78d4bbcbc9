import { Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { MemoryState, type MemoryStore, transaction } from "./MemoryState.ts"

/** `Transactor` on the shared memory state: serialised, all-or-nothing transactions; nested calls are savepoints. */
export const make = (store: MemoryStore): Kernel.Transactor["Service"] =>
  Kernel.Transactor.of({ withTransaction: (effect) => transaction(store, effect) })

export const layer: Layer.Layer<Kernel.Transactor, never, MemoryState> = Layer.effect(
  Kernel.Transactor,
  Effect.map(MemoryState, make)
)
