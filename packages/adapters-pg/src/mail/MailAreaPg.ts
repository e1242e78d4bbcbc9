import { areaPg } from "../Area.ts"
import createMailOutboxAndAudit from "./migrations/0001_create_mail_outbox_and_audit.ts"
import * as MailOutboxPg from "./MailOutboxPg.ts"

export const MailAreaPg = areaPg({
  name: "mail",
  stores: MailOutboxPg.layer,
  migrations: { "0001_create_mail_outbox_and_audit": createMailOutboxAndAudit }
})
