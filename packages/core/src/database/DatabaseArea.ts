import { Effect, Option } from "effect"
import type { AddonProvider } from "../addons/Addon.ts"
import { DatabaseNode } from "./DatabaseNode.ts"
import { BackupStore } from "./BackupStore.ts"
import { area, areaSettings } from "../Area.ts"
import { DatabaseConfig } from "./DatabaseConfig.ts"
import { nodeBinding } from "../node/NodeBinding.ts"
import type { TeardownStep } from "../projects/ProjectHooks.ts"
import { DatabaseConnect } from "./Database.ts"
import { Databases } from "./Databases.ts"
import { DatabaseStore } from "./DatabaseStore.ts"

/** Spec 4.6: the database add-on, its generations and its durable restore and delete. */
export const DatabaseArea = area({
  name: "database",
  ports: [DatabaseNode.off, BackupStore.off],
  settings: areaSettings({ key: "database", make: DatabaseConfig.make, fromEnv: () => DatabaseConfig.layerConfig }),
  stores: [DatabaseStore],
  services: Databases.layer,
  // The registry's view (ProjectDetail's flag, the overview). The routes are DatabaseApi's own: a create runs the
  // node's slow work (a cluster, its baseline generation) outside the org lock, which the generic grant holds.
  addon: Effect.map(Effect.service(DatabaseStore), (store): AddonProvider => ({
    name: "database",
    granted: (projectId) => Effect.map(store.find(projectId), Option.isSome),
    connected: Effect.succeed(true),
    status: ({ project }) => Effect.map(store.find(project.id), (row) => ({ db: Option.isSome(row) })),
    grant: () => Effect.die(new Error("the database is created through Databases.create")),
    revoke: () => Effect.die(new Error("the database is deleted through its delete operation"))
  })),
  node: nodeBinding(
    "db",
    DatabaseConnect,
    Effect.map(Effect.service(Databases), (databases) => databases.binding)
  ),
  // Project delete: no recovery generation. Spec 4.3's order: the database drained with the in-flight requests and
  // commits (it is suspended from the delete's acceptance), the cluster with the node data, the images with the git
  // repositories and backups.
  teardown: [
    Effect.map(Effect.service(Databases), (databases): TeardownStep => ({
      phase: "draining",
      run: (project) => databases.teardown(project.id, "drain")
    })),
    Effect.map(Effect.service(Databases), (databases): TeardownStep => ({
      phase: "data",
      run: (project) => databases.teardown(project.id, "node")
    })),
    Effect.map(Effect.service(Databases), (databases): TeardownStep => ({
      phase: "repositories",
      run: (project) => databases.teardown(project.id, "backups")
    }))
  ],
  // The operations, the schedule, and the kinds pinned to this replica's home (none without one).
  jobs: [Effect.map(Effect.service(Databases), (databases) => databases.handlers)]
})
