import { Context, type Effect } from "effect"
import type { OrgId } from "../kernel/Ids.ts"

/** What one area holds in an org, for the `org_not_empty` refusal. */
export interface Holding {
  readonly count: number
  /** A few names, for the message and `details.holdings`. */
  readonly names: ReadonlyArray<string>
}

export interface HoldingCounter {
  /** Plural kind shown in `details.holdings`: `projects`, `domains`, `repositories`, `zones`. */
  readonly kind: string
  readonly count: (orgId: OrgId) => Effect.Effect<Holding>
}

/** Every registered area's holdings counter; an org is deletable only when every count is 0. */
export class OrgHoldings extends Context.Service<OrgHoldings, ReadonlyArray<HoldingCounter>>()(
  "@hostplane/core/orgs/OrgHoldings"
) {}

/** Answers whether an org has a live paid subscription (decisions.md part 4); billing contributes one. */
export type SubscriptionCheck = (orgId: OrgId) => Effect.Effect<boolean>

/** True when any registered area's check says the org pays; false when no area contributes one. */
export class OrgSubscriptionCheck extends Context.Service<OrgSubscriptionCheck, SubscriptionCheck>()(
  "@hostplane/core/orgs/OrgSubscriptionCheck"
) {}
