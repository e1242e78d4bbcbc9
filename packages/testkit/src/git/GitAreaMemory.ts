import { Layer } from "effect"
import { areaMemory } from "../Area.ts"
import { gitStoreSuite } from "./GitStoreSuite.ts"
import * as CredentialStoreMemory from "./CredentialStoreMemory.ts"
import * as RepoStoreMemory from "./RepoStoreMemory.ts"

export const GitAreaMemory = areaMemory({
  name: "git",
  stores: Layer.merge(RepoStoreMemory.layer, CredentialStoreMemory.layer),
  suites: [gitStoreSuite]
})
