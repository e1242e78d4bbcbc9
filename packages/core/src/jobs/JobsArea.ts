import { area } from "../Area.ts"
import { Jobs } from "./Jobs.ts"
import { JobStore } from "./JobStore.ts"

/** The durable jobs engine: every area enqueues through `Jobs`; each area's `jobs` are its kinds' handlers. */
export const JobsArea = area({ name: "jobs", stores: [JobStore], services: Jobs.layer })
