import { areaPg } from "../Area.ts"
import * as OrgStorePg from "./OrgStorePg.ts"

/** The org tables are created with the identity tables (identity/0001). */
export const OrgsAreaPg = areaPg({ name: "orgs", stores: OrgStorePg.layer, migrations: {} })
