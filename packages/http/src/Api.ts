import type { NonEmptyReadonlyArray } from "effect/Array"
import { HttpApi, OpenApi } from "effect/http-api"
import { type AnyAreaHttp, apiId, apiPrefix, type GroupsOf } from "./Area.ts"
import { areas } from "./areas.ts"
import { DevAuthApi } from "./identity/IdentityApi.ts"
import { documentAnnotations } from "./server/OpenApiDocument.ts"

const description = [
  "The hostplane control API. Every path is under /v1; bodies are JSON.",
  "Errors are `{ code, message, details? }`; clients branch on `code`.",
  "Sign in with a bearer session token: `Authorization: Bearer <token>`.",
  "Lists are `{ items }`; paginated lists add `nextCursor`. Times are RFC 3339 UTC strings.",
  "Unknown JSON fields are ignored, never applied. Every response carries `X-Request-Id`.",
  "A POST made with a session takes an optional `Idempotency-Key` header: a retry with the same key gets the first answer again."
].join("\n\n")

/** The `/v1` API of a list of areas: every area's groups, in list order, fully typed. */
export const apiOf = <const As extends NonEmptyReadonlyArray<AnyAreaHttp>>(areas: As) =>
  HttpApi.make(apiId)
    .add(...(areas.flatMap((area) => area.groups) as unknown as NonEmptyReadonlyArray<GroupsOf<As[number]>>))
    .prefix(apiPrefix)
    .annotateMerge(OpenApi.annotations({ title: "hostplane control API", version: "1", description }))
    .annotateMerge(documentAnnotations())

const devAuth = DevAuthApi.prefix(apiPrefix)
type GroupsIn<A> = A extends HttpApi.HttpApi<string, infer G> ? G : never

// Spelled out: the inferred type of the whole API grew past what tsc serializes into declarations (TS7056).
const api: ReturnType<typeof apiOf<typeof areas>> = apiOf(areas)
const apiWithDevAuth: HttpApi.HttpApi<typeof apiId, GroupsIn<typeof api> | typeof devAuth> = api.add(devAuth)

/** The `/v1` API as served in production (no dev login). */
export class Api extends api {}

/** The same API with the local dev login of spec 4.1. */
export class ApiWithDevAuth extends apiWithDevAuth {}
