import { areaPg } from "../Area.ts"
import createWorkerLogs from "./migrations/0001_create_worker_logs.ts"
import groupWorkerLogEvents from "./migrations/0002_group_worker_log_events.ts"
import splitWorkerLogEvents from "./migrations/0003_split_worker_log_events.ts"
import * as LogStorePg from "./LogStorePg.ts"

export const LogsAreaPg = areaPg({
  name: "logs",
  stores: LogStorePg.layer,
  migrations: {
    "0001_create_worker_logs": createWorkerLogs,
    "0002_group_worker_log_events": groupWorkerLogEvents,
    "0003_split_worker_log_events": splitWorkerLogEvents
  }
})
