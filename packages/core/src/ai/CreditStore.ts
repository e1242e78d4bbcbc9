import { Context, type Effect } from "effect"
import type { OrgId } from "../kernel/Ids.ts"
import type { AutoTopup, CreditRow, LedgerEntry, LedgerRow } from "./Credit.ts"

/** Each org's prepaid AI balance and its ledger: every balance change is one ledger row, so the rows sum to the balance. */
export class CreditStore extends Context.Service<
  CreditStore,
  {
    /** The org's credit; the zero row when it has none. */
    readonly find: (orgId: OrgId) => Effect.Effect<CreditRow>
    /** Appends the row and moves the balance in one atomic step; answers the new balance. */
    readonly append: (entry: LedgerEntry) => Effect.Effect<number>
    /** Marks that a paid credit order stored a payment method (auto top-up may charge it). */
    readonly setPaymentMethod: (orgId: OrgId, at: string) => Effect.Effect<void>
    readonly setAutoTopup: (orgId: OrgId, autoTopup: AutoTopup, at: string) => Effect.Effect<void>
    /**
     * Counts one auto top-up on `day` (UTC `YYYY-MM-DD`) unless `perDay` were already counted that day; false then.
     * Atomic, so concurrent claims never exceed `perDay`.
     */
    readonly claimAutoTopup: (orgId: OrgId, day: string, perDay: number, at: string) => Effect.Effect<boolean>
    /** What the org's `call` rows since `since` cost, as a positive number (`spentMicroCents24h`). */
    readonly spentSince: (orgId: OrgId, since: string) => Effect.Effect<number>
    /** Newest first; `before` is an exclusive `ledger_id`. */
    readonly ledger: (
      orgId: OrgId,
      limit: number,
      before: number | undefined
    ) => Effect.Effect<ReadonlyArray<LedgerRow>>
  }
>()("@hostplane/core/ai/CreditStore") {}
