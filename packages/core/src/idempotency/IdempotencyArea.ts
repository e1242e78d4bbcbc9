import { area } from "../Area.ts"
import { Idempotency } from "./Idempotency.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"

/** `Idempotency-Key` on every POST: the first answer is kept per user and key and replayed to a retry. */
export const IdempotencyArea = area({ name: "idempotency", stores: [IdempotencyStore], services: Idempotency.layer })
