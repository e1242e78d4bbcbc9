import { Layer } from "effect"
import { areaPg } from "../Area.ts"
import createBillingAndCredit from "./migrations/0001_create_billing_and_credit.ts"
import createAiKeys from "./migrations/0002_create_ai_keys.ts"
import createAiCalls from "./migrations/0003_create_ai_calls.ts"
import addAiCallLeases from "./migrations/0004_add_ai_call_leases.ts"
import * as AiCallStorePg from "./AiCallStorePg.ts"
import * as AiKeyStorePg from "./AiKeyStorePg.ts"
import * as BillingStorePg from "./BillingStorePg.ts"
import * as CreditStorePg from "./CreditStorePg.ts"

export const BillingAreaPg = areaPg({
  name: "billing",
  stores: Layer.mergeAll(BillingStorePg.layer, CreditStorePg.layer, AiKeyStorePg.layer, AiCallStorePg.layer),
  migrations: {
    "0001_create_billing_and_credit": createBillingAndCredit,
    "0002_create_ai_keys": createAiKeys,
    "0003_create_ai_calls": createAiCalls,
    "0004_add_ai_call_leases": addAiCallLeases
  }
})
