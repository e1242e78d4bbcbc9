import { areaPg } from "../Area.ts"
import createMailLog from "../migrations/0016_create_mail_log.ts"
import * as EmailStorePg from "./EmailStorePg.ts"

export const EmailAreaPg = areaPg({
  name: "email",
  stores: EmailStorePg.layer,
  migrations: { "0016_create_mail_log": createMailLog }
})
