import { Layer } from "effect"
import { areaHttp } from "../Area.ts"
import { InvitesApi, MembersApi, OrgsApi } from "@hostplane/api/orgs/OrgsApi"
import { InvitesHandlers, MembersHandlers, OrgsHandlers } from "./OrgsHandlers.ts"

export const OrgsAreaHttp = areaHttp({
  name: "orgs",
  groups: [OrgsApi, MembersApi, InvitesApi],
  handlers: Layer.mergeAll(OrgsHandlers, MembersHandlers, InvitesHandlers),
  routes: [
    "GET /v1/orgs",
    "POST /v1/orgs",
    "PATCH /v1/orgs/{orgSlug}",
    "DELETE /v1/orgs/{orgSlug}",
    "GET /v1/orgs/{orgSlug}/notifications",
    "GET /v1/orgs/{orgSlug}/members",
    "POST /v1/orgs/{orgSlug}/members",
    "GET /v1/orgs/{orgSlug}/invites",
    "POST /v1/orgs/{orgSlug}/invites",
    "DELETE /v1/orgs/{orgSlug}/invites/{inviteId}",
    "GET /v1/invites/{token}",
    "POST /v1/invites/{token}/accept",
    "PUT /v1/orgs/{orgSlug}/members/{userId}",
    "DELETE /v1/orgs/{orgSlug}/members/{userId}"
  ]
})
