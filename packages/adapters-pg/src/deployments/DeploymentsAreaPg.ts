import { areaPg } from "../Area.ts"
import createDeployments from "./migrations/0001_create_deployments.ts"
import * as DeploymentStorePg from "./DeploymentStorePg.ts"

export const DeploymentsAreaPg = areaPg({
  name: "deployments",
  stores: DeploymentStorePg.layer,
  migrations: { "0001_create_deployments": createDeployments }
})
