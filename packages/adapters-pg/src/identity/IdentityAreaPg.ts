import { Layer } from "effect"
import { areaPg } from "../Area.ts"
import createIdentityAndOrgs from "./migrations/0001_create_identity_and_orgs.ts"
import notifyAuthChanges from "./migrations/0002_notify_auth_changes.ts"
import * as AuthCachePg from "./AuthCachePg.ts"
import * as UserStorePg from "./UserStorePg.ts"

export const IdentityAreaPg = areaPg({
  name: "identity",
  stores: Layer.merge(UserStorePg.layer, AuthCachePg.layer),
  migrations: {
    "0001_create_identity_and_orgs": createIdentityAndOrgs,
    "0002_notify_auth_changes": notifyAuthChanges
  }
})
