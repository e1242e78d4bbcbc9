import { Layer } from "effect"
import { areaHttp } from "../Area.ts"
import { IdentityApi } from "@hostplane/api/identity/IdentityApi"
import { DevAuthHandlers, IdentityHandlers } from "./IdentityHandlers.ts"

/** Spec 4.1; the dev login group is added by `ApiWithDevAuth` only, its handlers are always built. */
export const IdentityAreaHttp = areaHttp({
  name: "identity",
  groups: [IdentityApi],
  handlers: Layer.merge(IdentityHandlers, DevAuthHandlers),
  routes: [
    "POST /v1/auth/dev/login",
    "GET /v1/auth/idp/start",
    "GET /v1/auth/idp/callback",
    "GET /v1/config",
    "GET /v1/me"
  ]
})
