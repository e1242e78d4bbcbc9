import { Kernel } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, transaction } from "../memory/MemoryState.ts"
import * as OrgStoreMemory from "../orgs/OrgStoreMemory.ts"
import * as ProjectStoreMemory from "../projects/ProjectStoreMemory.ts"
import * as AuditLogMemory from "./AuditLogMemory.ts"
import * as NodeRevisionsMemory from "./NodeRevisionsMemory.ts"

/** The write envelope's last writes on the memory state: the audit row and the revision raise, either or both. */
const recordLast = (
  store: MemoryStore,
  audit: Kernel.AuditEvent | undefined,
  raise: Kernel.ProjectId | undefined
): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (audit !== undefined) yield* AuditLogMemory.make(store).record(audit)
    if (raise !== undefined) yield* NodeRevisionsMemory.make(store).raise(raise)
  })

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

/**
 * A store write that carries the envelope's `Finish` (`Mutation.projectStatement`) on the memory state: in one
 * transaction (the memory org lock), `lock`'s reads and the guard's checks, then `write`, the audit row and the raise;
 * a failing check writes nothing and fails with `EnvelopeRefused`. Without `finish`, `write` alone.
 */
export const guarded = <A>(
  store: MemoryStore,
  finish: Kernel.Finish | undefined,
  write: Effect.Effect<A>
): Effect.Effect<A, Kernel.EnvelopeRefused> =>
  finish === undefined
    ? write
    : transaction(
        store,
        Effect.gen(function* () {
          const { guard } = finish
          const read = yield* make(store).lock(guard.orgId, guard.userId, guard.projectId)
          if (!Kernel.guardAllows(guard, read)) return yield* new Kernel.EnvelopeRefused({ read })
          const written = yield* write
          yield* recordLast(store, finish.audit, finish.raise)
          return written
        })
      )

export const layer: Layer.Layer<Kernel.EnvelopeStore, never, MemoryState> = Layer.effect(
  Kernel.EnvelopeStore,
  Effect.map(MemoryState, make)
)
