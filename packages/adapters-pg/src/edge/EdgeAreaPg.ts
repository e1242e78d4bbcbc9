import { areaPg } from "../Area.ts"
import createEdgeSessions from "../migrations/0007_create_edge_sessions.ts"
import * as EdgeSessionStorePg from "./EdgeSessionStorePg.ts"

export const EdgeAreaPg = areaPg({
  name: "edge",
  stores: EdgeSessionStorePg.layer,
  migrations: { "0007_create_edge_sessions": createEdgeSessions }
})
