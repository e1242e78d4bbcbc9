import { areaProviders } from "../Area.ts"
import * as IdentityProviderOAuth from "./IdentityProviderOAuth.ts"

/** The OAuth identity provider from SERVICE_IDP_*, else none (sign-in through a provider answers 400). */
export const IdentityProviders = areaProviders({ name: "identity", fromEnv: IdentityProviderOAuth.layerConfig })
