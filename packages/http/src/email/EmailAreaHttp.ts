import { areaHttp } from "../Area.ts"
import { MailHooksApi } from "./EmailApi.ts"
import { EmailHandlers } from "./EmailHandlers.ts"

export const EmailAreaHttp = areaHttp({
  name: "email",
  groups: [MailHooksApi],
  handlers: EmailHandlers,
  routes: ["POST /v1/hooks/mailer"]
})
