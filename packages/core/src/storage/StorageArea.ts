import { Effect } from "effect"
import { ObjectStore } from "./ObjectStore.ts"
import { area } from "../Area.ts"
import { nodeBinding } from "../node/NodeBinding.ts"
import type { TeardownStep } from "../projects/ProjectHooks.ts"
import { storageAddonProvider } from "./StorageAddon.ts"
import { StorageBinding } from "./Storage.ts"
import { StorageNode } from "./StorageNode.ts"
import { StorageStore } from "./StorageStore.ts"

/** Spec 4.7: object storage under a fixed per-project prefix; the node reports usage; a project delete empties it. */
export const StorageArea = area({
  name: "storage",
  ports: [ObjectStore.off],
  stores: [StorageStore],
  services: StorageNode.layer,
  addon: storageAddonProvider,
  node: nodeBinding(
    "storage",
    StorageBinding,
    Effect.map(Effect.service(StorageNode), (storage) => storage.binding),
    { usage: Effect.map(Effect.service(StorageNode), (storage) => storage.recordUsage) }
  ),
  teardown: [
    Effect.map(Effect.service(StorageNode), (storage): TeardownStep => ({
      phase: "data",
      run: (project) => storage.teardown(project.id)
    }))
  ]
})
