import { areaPg } from "../Area.ts"
import createEdgeSessions from "./migrations/0001_create_edge_sessions.ts"
import * as EdgeSessionStorePg from "./EdgeSessionStorePg.ts"

export const EdgeAreaPg = areaPg({
  name: "edge",
  stores: EdgeSessionStorePg.layer,
  migrations: { "0001_create_edge_sessions": createEdgeSessions }
})
