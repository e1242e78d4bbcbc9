import type { Layer } from "effect"
import { storesOf } from "../Area.ts"
import { areas } from "../areas.ts"
import type { Stores } from "../Stores.ts"

/** Every store port on one fresh in-memory state; for tests and examples, never a running server's default. */
export const layerMemory: Layer.Layer<Stores> = storesOf(areas)
