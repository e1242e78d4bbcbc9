import { WorkerCheck } from "./WorkerCheck.ts"
import { area } from "../Area.ts"
import { Deployments } from "./Deployments.ts"
import { DeploymentStore } from "./DeploymentStore.ts"

/** Spec 4.3 deployments: bundle upload, versions, rollback. */
export const DeploymentsArea = area({
  name: "deployments",
  ports: [WorkerCheck.off],
  stores: [DeploymentStore],
  services: Deployments.layer
})
