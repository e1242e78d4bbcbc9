import { areaPg } from "../Area.ts"
import addHostnameChecks from "./migrations/0001_add_hostname_checks.ts"
import * as HostnameStorePg from "./HostnameStorePg.ts"

export const HostnamesAreaPg = areaPg({
  name: "hostnames",
  stores: HostnameStorePg.layer,
  migrations: { "0001_add_hostname_checks": addHostnameChecks }
})
