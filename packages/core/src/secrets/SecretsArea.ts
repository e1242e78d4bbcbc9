import { area } from "../Area.ts"
import { Secrets } from "./Secrets.ts"
import { SecretStore } from "./SecretStore.ts"

/** Spec 4.5: sealed project secrets. */
export const SecretsArea = area({ name: "secrets", stores: [SecretStore], services: Secrets.layer })
