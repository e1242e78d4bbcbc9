import { Layer } from "effect"
import { area } from "../Area.ts"
import { EmailStore } from "./EmailStore.ts"
import { MailHooks } from "./MailHooks.ts"
import { MailNotifications } from "./MailNotifications.ts"

/** Spec 4.8: project mail. The webhook takes the host's `MailNotifications` adapter, else refuses everything. */
export const EmailArea = area({
  name: "email",
  stores: [EmailStore],
  services: MailHooks.layer.pipe(Layer.provideMerge(MailNotifications.layerDefault))
})
