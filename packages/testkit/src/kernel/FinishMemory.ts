import { Kernel } from "@hostplane/core"
import { Effect, Option } from "effect"
import { type MemoryStore, read, transaction } from "../memory/MemoryState.ts"
import { memberKey, memberRows, orgRows } from "../orgs/OrgStoreMemory.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"
import * as AuditLogMemory from "./AuditLogMemory.ts"
import * as NodeRevisionsMemory from "./NodeRevisionsMemory.ts"

/**
 * The write envelope's last writes on the memory state, the audit row and the revision raise (`EnvelopeStore.finish`).
 * Apart from `EnvelopeStoreMemory`, so that area stores can use it without importing the org and project stores.
 */
export const recordLast = (
  store: MemoryStore,
  audit: Kernel.AuditEvent | undefined,
  raise: Kernel.ProjectId | undefined
): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (audit !== undefined) yield* AuditLogMemory.make(store).record(audit)
    if (raise !== undefined) yield* NodeRevisionsMemory.make(store).raise(raise)
  })

/** What `EnvelopeStore.lock` reads, from the tables: the org, the user's role in it, the project. */
const guardRead = (store: MemoryStore, guard: Kernel.Guard): Effect.Effect<Kernel.AccessRead> =>
  read(store, (tables) => {
    const org = Option.fromNullishOr(tables(orgRows).get(guard.orgId))
    if (Option.isNone(org)) return { org, role: Option.none(), project: Option.none() }
    return {
      org,
      role: Option.fromNullishOr(tables(memberRows).get(memberKey(guard.orgId, guard.userId))?.role),
      project: Option.fromNullishOr(tables(projectRows).get(guard.projectId))
    }
  })

/**
 * A store write that carries the envelope's `Finish` (`Mutation.projectStatement`) on the memory state: in one
 * transaction (the memory org lock), the guard's reads and checks, then `write`, the audit row and the raise; a
 * failing check writes nothing and fails with `EnvelopeRefused`. Without `finish`, `write` alone.
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
          const read = yield* guardRead(store, finish.guard)
          if (!Kernel.guardAllows(finish.guard, read)) return yield* new Kernel.EnvelopeRefused({ read })
          const written = yield* write
          yield* recordLast(store, finish.audit, finish.raise)
          return written
        })
      )
