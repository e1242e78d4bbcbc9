import { areaPg } from "../Area.ts"
import createStorage from "./migrations/0001_create_storage.ts"
import * as StorageStorePg from "./StorageStorePg.ts"

export const StorageAreaPg = areaPg({
  name: "storage",
  stores: StorageStorePg.layer,
  migrations: { "0001_create_storage": createStorage }
})
