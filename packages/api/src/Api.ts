import type { NonEmptyReadonlyArray } from "effect/Array"
import { HttpApi, type HttpApiGroup, OpenApi } from "effect/http-api"
import { AccessApi } from "./access/AccessApi.ts"
import { apiId, apiPrefix } from "./ApiPrefix.ts"
import { AiAddonApi, AiCreditApi, AiGatewayApi } from "./ai/AiApi.ts"
import { BillingApi, BillingHooksApi } from "./billing/BillingApi.ts"
import { DatabaseApi } from "./database/DatabaseApi.ts"
import { DeploymentsApi } from "./deployments/DeploymentsApi.ts"
import { DnsApi } from "./dns/DnsApi.ts"
import { DomainsApi } from "./domains/DomainsApi.ts"
import { EmailAddonApi, MailHooksApi, MailRelayApi } from "./email/EmailApi.ts"
import { AuthAddonApi } from "./enduser/EndUserApi.ts"
import { CredentialsApi, ReposApi } from "./git/GitApi.ts"
import { HostnamesApi } from "./hostnames/HostnamesApi.ts"
import { DevAuthApi, IdentityApi } from "./identity/IdentityApi.ts"
import { LogsApi, NodeLogsApi } from "./logs/LogsApi.ts"
import { NodeApi } from "./node/NodeApi.ts"
import { InvitesApi, MembersApi, OrgsApi } from "./orgs/OrgsApi.ts"
import { ProjectsApi } from "./projects/ProjectsApi.ts"
import { SecretsApi } from "./secrets/SecretsApi.ts"
import { documentAnnotations } from "./server/OpenApiDocument.ts"
import { StorageApi } from "./storage/StorageApi.ts"

export { apiId, apiPrefix }

const description = [
  "The hostplane control API. Every path is under /v1; bodies are JSON.",
  "Errors are `{ code, message, details? }`; clients branch on `code`.",
  "Sign in with a bearer session token: `Authorization: Bearer <token>`.",
  "Lists are `{ items }`; paginated lists add `nextCursor`. Times are RFC 3339 UTC strings.",
  "Unknown JSON fields are ignored, never applied. Every response carries `X-Request-Id`.",
  "A POST made with a session takes an optional `Idempotency-Key` header: a retry with the same key gets the first answer again."
].join("\n\n")

/** The `/v1` API of a list of groups, in list order, fully typed and documented. */
export const apiOfGroups = <const Groups extends NonEmptyReadonlyArray<HttpApiGroup.Constraint>>(groups: Groups) =>
  HttpApi.make(apiId)
    .add(...(groups as unknown as NonEmptyReadonlyArray<Groups[number]>))
    .prefix(apiPrefix)
    .annotateMerge(OpenApi.annotations({ title: "hostplane control API", version: "1", description }))
    .annotateMerge(documentAnnotations())

/**
 * Every `/v1` group the server serves, in the order it serves them: the server's areas (`@hostplane/http`'s
 * `areas`) carry exactly these group objects, which a test checks.
 */
export const groups = [
  IdentityApi,
  OrgsApi,
  MembersApi,
  InvitesApi,
  ProjectsApi,
  DeploymentsApi,
  SecretsApi,
  AccessApi,
  HostnamesApi,
  BillingHooksApi,
  BillingApi,
  DnsApi,
  DomainsApi,
  AiCreditApi,
  AiGatewayApi,
  MailHooksApi,
  MailRelayApi,
  EmailAddonApi,
  AiAddonApi,
  AuthAddonApi,
  StorageApi,
  ReposApi,
  CredentialsApi,
  DatabaseApi,
  NodeApi,
  LogsApi,
  NodeLogsApi
] as const

const devAuth = DevAuthApi.prefix(apiPrefix)
type GroupsIn<A> = A extends HttpApi.HttpApi<string, infer G> ? G : never

// Spelled out: the inferred type of the whole API grew past what tsc serializes into declarations (TS7056).
const api: ReturnType<typeof apiOfGroups<typeof groups>> = apiOfGroups(groups)
const apiWithDevAuth: HttpApi.HttpApi<typeof apiId, GroupsIn<typeof api> | typeof devAuth> = api.add(devAuth)

/** The `/v1` API as served in production (no dev login). */
export class Api extends api {}

/** The same API with the local dev login of spec 4.1. */
export class ApiWithDevAuth extends apiWithDevAuth {}
