import { Context, Effect, Layer, Option } from "effect"
import { Settings } from "../kernel/Settings.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { ObjectStore } from "./ObjectStore.ts"
import type { StorageBinding, UsageLine } from "./Storage.ts"
import { StorageStore } from "./StorageStore.ts"
import { portOn } from "../kernel/Port.ts"

/**
 * The storage add-on as the node and the project delete see it: the `storage` binding of the node state, the node's
 * usage reports (`usedBytes`), and the removal of a deleted project's objects.
 */
export class StorageNode extends Context.Service<
  StorageNode,
  {
    /** `{ prefix, quotaBytes }` while granted, else null; the quota is the org plan's now. */
    readonly binding: (projectId: ProjectId) => Effect.Effect<StorageBinding | null>
    /**
     * Records a node's report: the last line of a project wins. Lines of projects without a storage row (unknown,
     * deleted, never granted) are ignored; answers the ids it recorded.
     */
    readonly recordUsage: (lines: ReadonlyArray<UsageLine>) => Effect.Effect<ReadonlyArray<ProjectId>>
    /** Project teardown: every object under the project's prefix goes; nothing without a row or an object store. */
    readonly teardown: (projectId: ProjectId) => Effect.Effect<void>
  }
>()("@hostplane/core/storage/StorageNode") {
  static readonly layer = Layer.effect(
    StorageNode,
    Effect.gen(function* () {
      const store = yield* StorageStore
      const { planLimits } = yield* Settings
      const projects = yield* ProjectStore
      const orgs = yield* OrgStore
      const objects = portOn(yield* ObjectStore)

      const binding = Effect.fn("StorageNode.binding")(function* (projectId: ProjectId) {
        const row = yield* store.find(projectId)
        if (Option.isNone(row) || !row.value.granted) return null
        const project = yield* projects.findById(projectId)
        const org = Option.isSome(project) ? yield* orgs.findById(project.value.orgId) : Option.none()
        if (Option.isNone(org)) return null
        return { prefix: row.value.prefix, quotaBytes: planLimits[org.value.plan].storageQuotaBytes }
      })

      const recordUsage = Effect.fn("StorageNode.recordUsage")(function* (lines: ReadonlyArray<UsageLine>) {
        const last = new Map(lines.map((line) => [line.projectId, line]))
        return last.size === 0 ? [] : yield* store.recordUsage([...last.values()])
      })

      const teardown = Effect.fn("StorageNode.teardown")(function* (projectId: ProjectId) {
        const row = yield* store.find(projectId)
        if (Option.isNone(row) || Option.isNone(objects)) return
        // A failure is a defect: the delete's `data` phase fails and is retried.
        const removed = yield* Effect.orDie(objects.value.removePrefix(row.value.prefix))
        yield* Effect.logInfo("storage teardown", { projectId, removed })
      })

      return StorageNode.of({ binding, recordUsage, teardown })
    })
  )
}
