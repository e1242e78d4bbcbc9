import { Effect, Layer } from "effect"
import { MailNotifications } from "./MailNotifications.ts"
import { area } from "../Area.ts"
import { nodeBinding } from "../node/NodeBinding.ts"
import { emailProvider } from "./EmailAddon.ts"
import { EmailLog } from "./EmailLog.ts"
import { EmailStore } from "./EmailStore.ts"
import { MailHooks } from "./MailHooks.ts"
import { EmailBinding, MailRelay } from "./MailRelay.ts"
import { mailPurgeHandler } from "./MailPurge.ts"

/**
 * Spec 4.8: project mail. The add-on fixes each project's address; the log is read by viewers and purged by plan;
 * the webhook checks signatures with the host's `MailNotifications` (`off`: refuses everything); the node relay sends
 * through the host's `MailTransport` (`off`: 503 `mail_unavailable`).
 */
export const EmailArea = area({
  name: "email",
  ports: [MailNotifications.off],
  stores: [EmailStore],
  services: Layer.mergeAll(MailHooks.layer, EmailLog.layer, MailRelay.layer),
  addon: emailProvider,
  node: nodeBinding(
    "email",
    EmailBinding,
    Effect.map(Effect.service(MailRelay), (relay) => relay.binding)
  ),
  jobs: [mailPurgeHandler]
})
