import { areaProviders } from "../Area.ts"
import * as MailTransportAuto from "./MailTransportAuto.ts"

/** SMTP from SERVICE_SMTP_URL, else `.eml` files in `<data dir>/outbox`: the runner and the node mail relay send here. */
export const MailProviders = areaProviders({ name: "mail", fromEnv: MailTransportAuto.layerConfig })
