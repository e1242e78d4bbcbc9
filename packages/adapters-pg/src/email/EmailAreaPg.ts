import { areaPg } from "../Area.ts"
import createMailLog from "./migrations/0001_create_mail_log.ts"
import addMailLogPending from "./migrations/0002_add_mail_log_pending.ts"
import addMailLogLeases from "./migrations/0003_add_mail_log_leases.ts"
import * as EmailStorePg from "./EmailStorePg.ts"

export const EmailAreaPg = areaPg({
  name: "email",
  stores: EmailStorePg.layer,
  migrations: {
    "0001_create_mail_log": createMailLog,
    "0002_add_mail_log_pending": addMailLogPending,
    "0003_add_mail_log_leases": addMailLogLeases
  }
})
