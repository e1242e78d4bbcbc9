import { Layer } from "effect"
import { area } from "../Area.ts"
import { emailProvider } from "./EmailAddon.ts"
import { EmailLog } from "./EmailLog.ts"
import { EmailStore } from "./EmailStore.ts"
import { MailHooks } from "./MailHooks.ts"
import { MailRelay } from "./MailRelay.ts"
import { MailNotifications } from "./MailNotifications.ts"
import { mailPurgeHandler } from "./MailPurge.ts"

/**
 * Spec 4.8: project mail. The add-on fixes each project's address; the log is read by viewers and purged by plan;
 * the webhook takes the host's `MailNotifications` adapter, else refuses everything; the node relay sends through the
 * host's `MailTransport` when the services are given one.
 */
export const EmailArea = area({
  name: "email",
  stores: [EmailStore],
  services: Layer.mergeAll(
    MailHooks.layer.pipe(Layer.provideMerge(MailNotifications.layerDefault)),
    EmailLog.layer,
    MailRelay.layer
  ),
  addon: emailProvider,
  jobs: [mailPurgeHandler]
})
