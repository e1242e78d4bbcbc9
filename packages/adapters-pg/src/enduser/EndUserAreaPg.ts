import { areaPg } from "../Area.ts"
import createAuthAddon from "./migrations/0001_create_auth_addon.ts"
import * as AuthStorePg from "./AuthStorePg.ts"

export const EndUserAreaPg = areaPg({
  name: "enduser",
  stores: AuthStorePg.layer,
  migrations: { "0001_create_auth_addon": createAuthAddon }
})
