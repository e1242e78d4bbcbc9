import { areaMemory } from "../Area.ts"
import { projectStoreSuite } from "./ProjectStoreSuite.ts"
import * as ProjectStoreMemory from "./ProjectStoreMemory.ts"

export const ProjectsAreaMemory = areaMemory({
  name: "projects",
  stores: ProjectStoreMemory.layer,
  suites: [projectStoreSuite]
})
