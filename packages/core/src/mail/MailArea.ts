import { Layer } from "effect"
import { MailTransport } from "./Mail.ts"
import { area, areaSettings } from "../Area.ts"
import { MailConfig } from "./MailConfig.ts"
import { MailOutbox } from "./Mail.ts"
import { sendMailHandler } from "./SendMail.ts"

/** Service mail: the outbox rows, sent by the `send_mail` job kind (its handler needs a `MailTransport`). */
export const MailArea = area({
  name: "mail",
  ports: [MailTransport.off],
  settings: areaSettings({ key: "mail", make: MailConfig.make, fromEnv: () => MailConfig.layerConfig }),
  stores: [MailOutbox],
  services: Layer.empty,
  jobs: [sendMailHandler()]
})
