import { Context, Effect } from "effect"
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

/** Areas that own things in an org register a counter here; an org is deletable only when every count is 0. */
export const OrgHoldings = Context.Reference<ReadonlyArray<HoldingCounter>>("@hostplane/core/orgs/OrgHoldings", {
  defaultValue: () => []
})

/** Answers whether an org has a live paid subscription; billing replaces the default. */
export const OrgSubscriptionCheck = Context.Reference<(orgId: OrgId) => Effect.Effect<boolean>>(
  "@hostplane/core/orgs/OrgSubscriptionCheck",
  { defaultValue: () => () => Effect.succeed(false) }
)
