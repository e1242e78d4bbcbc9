import { Effect, Option } from "effect"
import { addonProvider, defineAddon } from "../addons/Addon.ts"
import { Settings } from "../kernel/Settings.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import type { ProjectAccess } from "../kernel/Policy.ts"
import { ObjectStore } from "./ObjectStore.ts"
import { StorageStatus } from "./Storage.ts"
import { StorageStore } from "./StorageStore.ts"
import { portOn } from "../kernel/Port.ts"

/** Spec 4.7's add-on: status (viewer), grant (member), revoke (admin, objects kept); audit `storage.grant`, `storage.revoke`. */
export const storageAddon = defineAddon({
  name: "storage",
  status: StorageStatus,
  audit: { grant: "storage.grant", revoke: "storage.revoke" }
})

/** A project's prefix: from its id, which never changes, so a rename never moves its objects. */
export const prefixFor = (projectId: ProjectId): string => `${projectId}/`

/**
 * The storage add-on's provider. The first grant fixes the prefix in the project's row; a revoke only clears the
 * flag (objects and the last reported usage stay). The quota is the org plan's, read live. With `ObjectStore.off`
 * the add-on's backend is not connected: 503 `no_core`.
 */
export const storageAddonProvider = Effect.gen(function* () {
  const store = yield* StorageStore
  const objects = portOn(yield* ObjectStore)
  const { planLimits } = yield* Settings

  const status = Effect.fnUntraced(function* (access: ProjectAccess) {
    const row = yield* store.find(access.project.id)
    return {
      enabled: Option.isSome(row) && row.value.granted,
      prefix: Option.isSome(row) ? row.value.prefix : prefixFor(access.project.id),
      quotaBytes: planLimits[access.org.plan].storageQuotaBytes,
      usedBytes: Option.isSome(row) ? row.value.usedBytes : 0
    } satisfies StorageStatus
  })

  return addonProvider(storageAddon, {
    granted: (projectId) =>
      Effect.map(
        store.find(projectId),
        Option.exists((row) => row.granted)
      ),
    connected: Effect.succeed(Option.isSome(objects)),
    status,
    grant: Effect.fnUntraced(function* (write) {
      const row = yield* store.find(write.project.id)
      const changed = !(Option.isSome(row) && row.value.granted)
      if (changed) {
        const prefix = Option.isSome(row) ? row.value.prefix : prefixFor(write.project.id)
        yield* store.setGranted(write.project.id, prefix, true)
      }
      return { answer: yield* status(write), changed }
    }),
    revoke: Effect.fnUntraced(function* (write) {
      const row = yield* store.find(write.project.id)
      if (Option.isNone(row) || !row.value.granted) return false
      yield* store.setGranted(write.project.id, row.value.prefix, false)
      return true
    })
  })
})
