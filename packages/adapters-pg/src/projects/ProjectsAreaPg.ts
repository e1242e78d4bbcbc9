import { areaPg } from "../Area.ts"
import createProjectsHostnamesOperations from "./migrations/0001_create_projects_hostnames_operations.ts"
import * as ProjectStorePg from "./ProjectStorePg.ts"

export const ProjectsAreaPg = areaPg({
  name: "projects",
  stores: ProjectStorePg.layer,
  migrations: { "0001_create_projects_hostnames_operations": createProjectsHostnamesOperations }
})
