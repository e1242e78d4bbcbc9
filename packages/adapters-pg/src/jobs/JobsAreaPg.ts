import { areaPg } from "../Area.ts"
import createJobs from "./migrations/0001_create_jobs.ts"
import notifyJobs from "./migrations/0002_notify_jobs.ts"
import * as JobStorePg from "./JobStorePg.ts"

export const JobsAreaPg = areaPg({
  name: "jobs",
  stores: JobStorePg.layer,
  migrations: { "0001_create_jobs": createJobs, "0002_notify_jobs": notifyJobs }
})
