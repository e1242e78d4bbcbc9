import { Layer } from "effect"
import { area } from "../Area.ts"
import { MailOutbox } from "./Mail.ts"
import { sendMailHandler } from "./SendMail.ts"

/** Service mail: the outbox rows, sent by the `send_mail` job kind (its handler needs a `MailTransport`). */
export const MailArea = area({ name: "mail", stores: [MailOutbox], services: Layer.empty, jobs: [sendMailHandler()] })
