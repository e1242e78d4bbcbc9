import { areaProviders } from "../Area.ts"
import * as SocialOAuthHttp from "./SocialOAuthHttp.ts"

/**
 * The edge's end-user sign-in: the providers' OAuth endpoints (SERVICE_AUTH_*_URL overrides them). The users'
 * directory lives in each project's own database, so it is the PostgreSQL adapters' (`EndUserAreaPg`).
 */
export const EndUserProviders = areaProviders({ name: "enduser", fromEnv: SocialOAuthHttp.layerConfig })
