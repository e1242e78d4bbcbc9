import { areaProviders } from "../Area.ts"
import * as RegistrarNameCom from "./RegistrarNameCom.ts"

/** Name.com from SERVICE_REGISTRAR_*; without them domain purchases answer 503 registrar_not_configured. */
export const DomainsProviders = areaProviders({ name: "domains", fromEnv: RegistrarNameCom.layerConfig })
