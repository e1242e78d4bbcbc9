import { HttpApi, OpenApi } from "effect/http-api"
import { AccessApi } from "./access/AccessApi.ts"
import { DeploymentsApi } from "./deployments/DeploymentsApi.ts"
import { HostnamesApi } from "./hostnames/HostnamesApi.ts"
import { DevAuthApi, IdentityApi } from "./identity/IdentityApi.ts"
import { InvitesApi, MembersApi, OrgsApi } from "./orgs/OrgsApi.ts"
import { ProjectsApi } from "./projects/ProjectsApi.ts"
import { SecretsApi } from "./secrets/SecretsApi.ts"
import { documentAnnotations } from "./server/OpenApiDocument.ts"

const description = [
  "The hostplane control API. Every path is under /v1; bodies are JSON.",
  "Errors are `{ code, message, details? }`; clients branch on `code`.",
  "Sign in with a bearer session token: `Authorization: Bearer <token>`.",
  "Lists are `{ items }`; paginated lists add `nextCursor`. Times are RFC 3339 UTC strings.",
  "Unknown JSON fields are ignored, never applied. Every response carries `X-Request-Id`.",
  "A POST made with a session takes an optional `Idempotency-Key` header: a retry with the same key gets the first answer again."
].join("\n\n")

/** The `/v1` API as served in production (no dev login). */
export class Api extends HttpApi.make("hostplane")
  .add(IdentityApi)
  .add(OrgsApi)
  .add(MembersApi)
  .add(InvitesApi)
  .add(ProjectsApi)
  .add(DeploymentsApi)
  .add(SecretsApi)
  .add(AccessApi)
  .add(HostnamesApi)
  .prefix("/v1")
  .annotateMerge(OpenApi.annotations({ title: "hostplane control API", version: "1", description }))
  .annotateMerge(documentAnnotations()) {}

/** The same API with the local dev login of spec 4.1. */
export class ApiWithDevAuth extends Api.add(DevAuthApi.prefix("/v1")) {}
