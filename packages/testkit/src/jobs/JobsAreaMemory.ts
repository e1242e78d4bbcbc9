import { areaMemory } from "../Area.ts"
import { jobStoreSuite } from "./JobStoreSuite.ts"
import * as JobStoreMemory from "./JobStoreMemory.ts"

export const JobsAreaMemory = areaMemory({ name: "jobs", stores: JobStoreMemory.layer, suites: [jobStoreSuite] })
