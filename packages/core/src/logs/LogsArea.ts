import { Effect } from "effect"
import { area, areaSettings } from "../Area.ts"
import { LogsConfig } from "./LogsConfig.ts"
import type { TeardownStep } from "../projects/ProjectHooks.ts"
import { logPurgeHandler } from "./LogPurge.ts"
import { LogStore } from "./LogStore.ts"
import { RuntimeLogs } from "./RuntimeLogs.ts"

/** decisions.md part 13: one event per worker invocation, read and followed by members, kept 24 h or 10,000. */
export const LogsArea = area({
  name: "logs",
  settings: areaSettings({ key: "logs", make: LogsConfig.make, fromEnv: () => LogsConfig.layerConfig }),
  stores: [LogStore],
  services: RuntimeLogs.layer,
  teardown: [
    Effect.map(Effect.service(RuntimeLogs), (logs): TeardownStep => ({
      phase: "data",
      run: (project) => logs.teardown(project.id)
    }))
  ],
  jobs: [logPurgeHandler]
})
