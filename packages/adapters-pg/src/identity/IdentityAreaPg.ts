import { areaPg } from "../Area.ts"
import createIdentityAndOrgs from "../migrations/0001_create_identity_and_orgs.ts"
import * as UserStorePg from "./UserStorePg.ts"

export const IdentityAreaPg = areaPg({
  name: "identity",
  stores: UserStorePg.layer,
  migrations: { "0001_create_identity_and_orgs": createIdentityAndOrgs }
})
