import { areaPg } from "../Area.ts"
import addPasswordGeneration from "./migrations/0001_add_password_generation.ts"
import * as AccessStorePg from "./AccessStorePg.ts"

/** The access tables are created with the secrets table (secrets/0001). */
export const AccessAreaPg = areaPg({
  name: "access",
  stores: AccessStorePg.layer,
  migrations: { "0001_add_password_generation": addPasswordGeneration }
})
