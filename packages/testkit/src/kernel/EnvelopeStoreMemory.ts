import { Kernel } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore } from "../memory/MemoryState.ts"
import * as OrgStoreMemory from "../orgs/OrgStoreMemory.ts"
import * as ProjectStoreMemory from "../projects/ProjectStoreMemory.ts"
import { recordLast } from "./FinishMemory.ts"

/** `EnvelopeStore` on the shared memory state: the reads and writes of the area stores it fuses, one after another. */
export const make = (store: MemoryStore): Kernel.EnvelopeStore["Service"] => {
  const orgs = OrgStoreMemory.make(store)
  const projects = ProjectStoreMemory.make(store)
  const roleIn = (org: Option.Option<{ readonly id: Kernel.OrgId }>, userId: Kernel.UserId) =>
    Option.isSome(org) ? orgs.findMembership(org.value.id, userId) : Effect.succeed(Option.none<Kernel.Role>())
  return Kernel.EnvelopeStore.of({
    access: (orgSlug, userId, projectName) =>
      Effect.gen(function* () {
        const org = yield* orgs.findBySlug(orgSlug)
        const role = yield* roleIn(org, userId)
        const project =
          Option.isSome(org) && projectName !== undefined
            ? yield* projects.findByName(org.value.id, projectName)
            : Option.none()
        return { org, role, project }
      }),
    lock: (orgId, userId, projectId) =>
      Effect.gen(function* () {
        yield* orgs.lock(orgId)
        const org = yield* orgs.findById(orgId)
        const role = yield* roleIn(org, userId)
        const project =
          Option.isSome(org) && projectId !== undefined ? yield* projects.findById(projectId) : Option.none()
        return { org, role, project }
      }),
    finish: (audit, raise) => recordLast(store, audit, raise)
  })
}

export const layer: Layer.Layer<Kernel.EnvelopeStore, never, MemoryState> = Layer.effect(
  Kernel.EnvelopeStore,
  Effect.map(MemoryState, make)
)
