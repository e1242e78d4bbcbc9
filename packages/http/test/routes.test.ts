import { ApiWithDevAuth } from "@hostplane/http"
import { OpenApi } from "effect/http-api"
import { expect, it } from "vitest"

/** Every route of spec parts 4.1 to 4.5 and 4.11, spelled as the spec spells it. */
const specRoutes = [
  "POST /v1/auth/dev/login",
  "GET /v1/auth/idp/start",
  "GET /v1/auth/idp/callback",
  "GET /v1/config",
  "GET /v1/me",
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
  "DELETE /v1/orgs/{orgSlug}/members/{userId}",
  "GET /v1/orgs/{orgSlug}/projects",
  "POST /v1/orgs/{orgSlug}/projects",
  "GET /v1/orgs/{orgSlug}/projects/{projectName}",
  "DELETE /v1/orgs/{orgSlug}/projects/{projectName}",
  "GET /v1/orgs/{orgSlug}/operations/{opId}",
  "GET /v1/orgs/{orgSlug}/projects/{projectName}/overview",
  "GET /v1/orgs/{orgSlug}/projects/{projectName}/deployments",
  "POST /v1/orgs/{orgSlug}/projects/{projectName}/deployments",
  "POST /v1/orgs/{orgSlug}/projects/{projectName}/rollback",
  "GET /v1/orgs/{orgSlug}/projects/{projectName}/hostnames",
  "POST /v1/orgs/{orgSlug}/projects/{projectName}/hostnames",
  "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/hostnames/{host}",
  "POST /v1/orgs/{orgSlug}/projects/{projectName}/hostnames/{host}/verify",
  "GET /v1/orgs/{orgSlug}/projects/{projectName}/secrets",
  "PUT /v1/orgs/{orgSlug}/projects/{projectName}/secrets/{secretName}",
  "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/secrets/{secretName}",
  "GET /v1/orgs/{orgSlug}/projects/{projectName}/access",
  "PUT /v1/orgs/{orgSlug}/projects/{projectName}/access",
  "POST /v1/orgs/{orgSlug}/projects/{projectName}/access/bypass",
  "DELETE /v1/orgs/{orgSlug}/projects/{projectName}/access/bypass",
  "POST /v1/access/authorize"
]

it("the API serves exactly the routes of spec 4.1-4.5 and 4.11, with the spec's paths and methods", () => {
  const paths = OpenApi.fromApi(ApiWithDevAuth).paths as Record<string, Record<string, unknown>>
  const served = Object.entries(paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`)
  )
  expect([...served].sort()).toEqual([...specRoutes].sort())
})
