import { areaPg } from "../Area.ts"
import createDatabases from "./migrations/0001_create_databases.ts"
import addDatabaseHome from "./migrations/0002_add_database_home.ts"
import * as DatabaseNodeEmbedded from "./DatabaseNodeEmbedded.ts"
import * as DatabaseStorePg from "./DatabaseStorePg.ts"

export const DatabaseAreaPg = areaPg({
  name: "database",
  stores: DatabaseStorePg.layer,
  migrations: { "0001_create_databases": createDatabases, "0002_add_database_home": addDatabaseHome },
  // One PostgreSQL cluster per project under <data dir>/node/db.
  providers: DatabaseNodeEmbedded.layerConfig
})
