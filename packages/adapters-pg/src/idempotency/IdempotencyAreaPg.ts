import { areaPg } from "../Area.ts"
import createIdempotencyKeys from "./migrations/0001_create_idempotency_keys.ts"
import * as IdempotencyStorePg from "./IdempotencyStorePg.ts"

export const IdempotencyAreaPg = areaPg({
  name: "idempotency",
  stores: IdempotencyStorePg.layer,
  migrations: { "0001_create_idempotency_keys": createIdempotencyKeys }
})
