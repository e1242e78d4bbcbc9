import { Context, type Effect, type Option } from "effect"
import type { OrgId } from "../kernel/Ids.ts"
import type { DomainRow } from "./Domain.ts"

/** Domains, unique by name across every org; writes join the ambient transaction. */
export class DomainStore extends Context.Service<
  DomainStore,
  {
    readonly find: (name: string) => Effect.Effect<Option.Option<DomainRow>>
    /** The org's domains by name. */
    readonly list: (orgId: OrgId) => Effect.Effect<ReadonlyArray<DomainRow>>
    /** Every purchased domain past its registration, by name: what the registrar sync walks. */
    readonly listRegistered: Effect.Effect<ReadonlyArray<DomainRow>>
    /** Inserts a new name; false when any org holds it already. */
    readonly insert: (row: DomainRow) => Effect.Effect<boolean>
    /** Replaces the stored row of `row.name` (its org included); false when there is none. */
    readonly save: (row: DomainRow) => Effect.Effect<boolean>
    readonly remove: (name: string) => Effect.Effect<boolean>
  }
>()("@hostplane/core/domains/DomainStore") {}
