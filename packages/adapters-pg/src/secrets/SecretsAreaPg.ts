import { areaPg } from "../Area.ts"
import createSecretsAndAccess from "./migrations/0001_create_secrets_and_access.ts"
import * as SecretStorePg from "./SecretStorePg.ts"

export const SecretsAreaPg = areaPg({
  name: "secrets",
  stores: SecretStorePg.layer,
  migrations: { "0001_create_secrets_and_access": createSecretsAndAccess }
})
