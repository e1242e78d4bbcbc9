import { Context, Duration, Layer } from "effect"

/** How invites behave; not an environment setting (decisions.md: single-use, valid 7 days), tests shorten it. */
export interface InvitesConfigShape {
  readonly inviteTtl: Duration.Duration
}

/** Invite settings. */
export class InvitesConfig extends Context.Service<InvitesConfig, InvitesConfigShape>()(
  "@hostplane/core/orgs/InvitesConfig"
) {
  static readonly make = (overrides: Partial<InvitesConfigShape> = {}) =>
    Layer.succeed(InvitesConfig, { inviteTtl: Duration.days(7), ...overrides })

  static readonly layerConfig = InvitesConfig.make()
}
