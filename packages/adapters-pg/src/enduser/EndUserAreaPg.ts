import { Layer } from "effect"
import { areaPg } from "../Area.ts"
import * as DatabaseNodeEmbedded from "../database/DatabaseNodeEmbedded.ts"
import createAuthAddon from "./migrations/0001_create_auth_addon.ts"
import * as AuthStorePg from "./AuthStorePg.ts"
import * as EndUserDirectoryPg from "./EndUserDirectoryPg.ts"

export const EndUserAreaPg = areaPg({
  name: "enduser",
  stores: AuthStorePg.layer,
  migrations: { "0001_create_auth_addon": createAuthAddon },
  // The edge's end users and sessions in each project's own database, over TLS verified with the node's authority
  // (the database area's node: one build shares it).
  providers: EndUserDirectoryPg.layer.pipe(Layer.provide(DatabaseNodeEmbedded.layerConfig))
})
