import { areaMemory } from "../Area.ts"
import { deploymentStoreSuite } from "./DeploymentStoreSuite.ts"
import * as DeploymentStoreMemory from "./DeploymentStoreMemory.ts"

export const DeploymentsAreaMemory = areaMemory({
  name: "deployments",
  stores: DeploymentStoreMemory.layer,
  suites: [deploymentStoreSuite]
})
