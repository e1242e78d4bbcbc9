import { areaProviders } from "../Area.ts"
import * as MailNotificationsSns from "../mail/MailNotificationsSns.ts"

/** SNS signatures for the mail webhook (certificates fetched, or from SERVICE_MAIL_SNS_CERTS). */
export const EmailProviders = areaProviders({ name: "email", fromEnv: MailNotificationsSns.layerConfig })
