import { area } from "../Area.ts"
import { projectDeleteHandler, projectHoldings, Projects } from "./Projects.ts"
import { ProjectStore } from "./ProjectStore.ts"

/** Spec 4.3 projects: an org holds its projects; a project delete is a durable operation. */
export const ProjectsArea = area({
  name: "projects",
  stores: [ProjectStore],
  services: Projects.layer,
  holdings: [projectHoldings],
  jobs: [projectDeleteHandler]
})
