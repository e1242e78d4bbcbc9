import { Identity } from "@hostplane/core"
import { Layer } from "effect"
import { areaMemory } from "../Area.ts"
import { userStoreSuite } from "./UserStoreSuite.ts"
import * as UserStoreMemory from "./UserStoreMemory.ts"

/** The auth cache here is invalidated in process only: the memory store has one process. */
export const IdentityAreaMemory = areaMemory({
  name: "identity",
  stores: Layer.merge(UserStoreMemory.layer, Identity.AuthCache.layer),
  suites: [userStoreSuite]
})
