import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Api } from "../../src/Api.ts"

type Role = "viewer" | "member" | "admin"

/**
 * The spec's role column for the org routes whose minimum is above viewer (control-api.md parts 4.2 to 4.15); a route
 * not listed needs a membership. The tests hold the endpoints' rules and the answers to these.
 */
const specRoles: Readonly<Record<string, Role>> = {
  "PATCH /v1/orgs/:orgSlug": "admin",
  "DELETE /v1/orgs/:orgSlug": "admin",
  "GET /v1/orgs/:orgSlug/members": "member",
  "POST /v1/orgs/:orgSlug/members": "admin",
  "PUT /v1/orgs/:orgSlug/members/:userId": "admin",
  // Removing another member; removing yourself (leaving) needs only a membership.
  "DELETE /v1/orgs/:orgSlug/members/:userId": "admin",
  "GET /v1/orgs/:orgSlug/invites": "admin",
  "POST /v1/orgs/:orgSlug/invites": "admin",
  "DELETE /v1/orgs/:orgSlug/invites/:inviteId": "admin",
  "POST /v1/orgs/:orgSlug/projects": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/deployments": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/rollback": "member",
  "GET /v1/orgs/:orgSlug/projects/:projectName/secrets": "member",
  "PUT /v1/orgs/:orgSlug/projects/:projectName/secrets/:secretName": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/secrets/:secretName": "member",
  "PUT /v1/orgs/:orgSlug/projects/:projectName/access": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/access/bypass": "admin",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/access/bypass": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/hostnames": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/hostnames/:host": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/hostnames/:host/verify": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/hostnames/:host/tls/retry": "member",
  "POST /v1/orgs/:orgSlug/billing/checkout": "admin",
  "POST /v1/orgs/:orgSlug/billing/portal": "admin",
  "POST /v1/orgs/:orgSlug/billing/session": "admin",
  "POST /v1/orgs/:orgSlug/billing/cancel": "admin",
  "POST /v1/orgs/:orgSlug/dns/zones": "admin",
  "DELETE /v1/orgs/:orgSlug/dns/zones/:zone": "admin",
  "PUT /v1/orgs/:orgSlug/dns/zones/:zone/rrsets/:name/:type": "member",
  "DELETE /v1/orgs/:orgSlug/dns/zones/:zone/rrsets/:name/:type": "member",
  "POST /v1/orgs/:orgSlug/dns/zones/:zone/dnssec": "admin",
  "PUT /v1/orgs/:orgSlug/dns/zones/:zone/dnssec/ds": "admin",
  "POST /v1/orgs/:orgSlug/domains": "admin",
  "POST /v1/orgs/:orgSlug/domains/check": "member",
  "POST /v1/orgs/:orgSlug/domains/import": "admin",
  "POST /v1/orgs/:orgSlug/domains/:name/renew": "admin",
  "POST /v1/orgs/:orgSlug/domains/:name/auto-renew": "admin",
  "POST /v1/orgs/:orgSlug/domains/:name/lock": "admin",
  "POST /v1/orgs/:orgSlug/domains/:name/auth-code": "admin",
  "POST /v1/orgs/:orgSlug/domains/:name/sync": "member",
  "GET /v1/orgs/:orgSlug/ai/credit": "member",
  "GET /v1/orgs/:orgSlug/ai/ledger": "member",
  "POST /v1/orgs/:orgSlug/ai/credit/checkout": "admin",
  "PUT /v1/orgs/:orgSlug/ai/autotopup": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/email": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/email": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/ai": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/ai": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/auth": "member",
  "PATCH /v1/orgs/:orgSlug/projects/:projectName/auth": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/auth": "admin",
  "PUT /v1/orgs/:orgSlug/projects/:projectName/auth/providers/:provider": "admin",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/auth/providers/:provider": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/storage": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/storage": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/repos": "member",
  "PATCH /v1/orgs/:orgSlug/projects/:projectName/repos/:repoName": "admin",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/repos/:repoName": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/database": "member",
  "GET /v1/orgs/:orgSlug/projects/:projectName/database/connect": "member",
  "GET /v1/orgs/:orgSlug/projects/:projectName/database/tokens": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/database/tokens": "member",
  "DELETE /v1/orgs/:orgSlug/projects/:projectName/database/tokens/:tokenUser": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/database/export": "member",
  "GET /v1/orgs/:orgSlug/projects/:projectName/database/generations": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/database/restore": "admin",
  "POST /v1/orgs/:orgSlug/projects/:projectName/database/delete": "admin",
  "GET /v1/orgs/:orgSlug/projects/:projectName/database/operations/:opId": "member",
  "POST /v1/orgs/:orgSlug/projects/:projectName/database/operations/:opId/abort": "admin",
  "GET /v1/orgs/:orgSlug/projects/:projectName/logs": "member",
  "GET /v1/orgs/:orgSlug/projects/:projectName/logs/stream": "member"
}

/** The spec's minimum role of an org route (`METHOD template`). */
export const specRoleOf = (method: string, template: string): Role => specRoles[`${method} ${template}`] ?? "viewer"

/** The routes the table names, for the check that each exists. */
export const specRolesListed = Object.keys(specRoles)

/** Every endpoint of the API under `/v1/orgs/:orgSlug`. */
export const orgEndpoints: ReadonlyArray<HttpApiEndpoint.Top> = Object.values(
  Api.groups as Record<string, HttpApiGroup.Constraint>
)
  .flatMap((group) => Object.values(group.endpoints as Record<string, HttpApiEndpoint.Top>))
  .filter((endpoint) => endpoint.path.includes(":orgSlug"))
