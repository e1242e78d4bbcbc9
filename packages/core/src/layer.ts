import { Layer } from "effect"
import { Identity } from "./identity/Identity.ts"
import { Policy } from "./kernel/Policy.ts"
import { Tokens } from "./kernel/Tokens.ts"
import { Invites } from "./orgs/Invites.ts"
import { Members } from "./orgs/Members.ts"
import { Notifications } from "./orgs/Notifications.ts"
import { Orgs } from "./orgs/Orgs.ts"

/**
 * Every core service, with its ports left open: a host provides the stores (`UserStore`, `OrgStore`, `MailOutbox`,
 * `AuditLog`, `Transactor`), `Settings`, and optionally an `IdentityProvider`.
 */
export const services = Layer.mergeAll(Members.layer, Invites.layer, Notifications.layer, Identity.layer).pipe(
  Layer.provideMerge(Orgs.layer),
  Layer.provideMerge(Policy.layer),
  Layer.provideMerge(Tokens.layer)
)
