import { Errors, Idempotency, Orgs, Secrets } from "@hostplane/core"
import { OpenApi } from "effect/http-api"

/** A canonical hostname: lowercase punycode labels, at most 253 characters, no trailing dot. */
export const hostnamePattern =
  "^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$"

/** The name rules of decisions.md part 1, by path parameter, with what the server does with a name outside them. */
const parameterPatterns: Record<string, { readonly pattern: string; readonly description: string }> = {
  orgSlug: {
    pattern: Orgs.slugPattern.source,
    description: "The org's slug (decisions.md part 1). No org has a slug outside this pattern: such a path is 404."
  },
  projectName: {
    pattern: Orgs.slugPattern.source,
    description: "The project's name (decisions.md part 1). No project has a name outside this pattern: 404."
  },
  secretName: {
    pattern: Secrets.secretNamePattern.source,
    description:
      "Case-sensitive. A PUT of a name outside this pattern is 400 `bad_request`; `DB`, `ASSETS` and names starting `SERVICE_` (any case) are 400 `reserved_name`."
  },
  host: {
    pattern: hostnamePattern,
    description:
      "The hostname in canonical form (lowercase punycode); other spellings of it are accepted and canonicalised."
  }
}

type Json = Record<string, any>

const envelope = (code: string | ReadonlyArray<string>, description: string): Json => ({
  type: "object",
  description,
  properties: {
    code: { type: "string", enum: typeof code === "string" ? [code] : [...code] },
    message: { type: "string" },
    details: { type: "object" }
  },
  required: ["code", "message"]
})

const badRequest = envelope(
  Errors.BadRequest.code,
  "The body, a parameter or a header failed its schema: `details.issues` is `[{ path, message }]`."
)

const idempotencyHeader: Json = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  schema: { type: "string", minLength: 1, maxLength: 255, pattern: Idempotency.keyPattern.source },
  description: [
    "Makes a retry of this POST safe. The first request of a key (per user) runs and its answer is kept for 24 hours;",
    "a retry with the same method, path and body (compared byte for byte) gets that answer again, with",
    "`Idempotent-Replayed: true`. The same key with another request is 422 `idempotency_key_reused`. A retry that",
    "arrives while the first request runs waits for it (409 `idempotency_key_in_use` after 10 minutes). Answers the",
    "endpoint gave are kept, 2xx and 4xx alike; nothing is kept for a request refused before the endpoint ran (400",
    "for a malformed body or parameters), for 401, 429 and 5xx, nor for an answer that carries a secret",
    "(`Cache-Control: no-store`): a retry of those runs again. A malformed key is 400. Bundle uploads keep streaming:",
    "the body is hashed as it passes. Ignored on requests without a session (the dev login, webhooks)."
  ].join(" ")
}

/** Adds `schema` as a possible answer at `status`, beside what the operation already declares there. */
const addResponse = (operation: Json, status: string, schema: Json, description: string) => {
  operation.responses ??= {}
  const existing = operation.responses[status]
  if (existing === undefined) {
    operation.responses[status] = { description, content: { "application/json": { schema } } }
    return
  }
  const content = (existing.content ??= {})
  const current = content["application/json"]?.schema
  content["application/json"] = { schema: current === undefined ? schema : { anyOf: [current, schema] } }
}

/** The API accepts and ignores unknown fields, so no object of the document is closed. */
const openObjects = (node: unknown): void => {
  if (Array.isArray(node)) return node.forEach(openObjects)
  if (node === null || typeof node !== "object") return
  const record = node as Json
  if (record.additionalProperties === false) delete record.additionalProperties
  Object.values(record).forEach(openObjects)
}

const methods = ["get", "put", "post", "delete", "patch"] as const

/**
 * The conventions of every operation that the generated document leaves out: the bearer scheme spelled as tools
 * expect it (`bearer`, so the docs page's examples send `Authorization: Bearer`), open objects, the name patterns the
 * server enforces, the 400 of schema failures, and `Idempotency-Key` on the POSTs made with a session.
 */
export const polish = (spec: Json): Json => {
  spec.components ??= {}
  spec.components.securitySchemes = {
    ...spec.components.securitySchemes,
    bearer: {
      type: "http",
      scheme: "bearer",
      description: "A session token from sign-in (or the dev login): `Authorization: Bearer <token>`."
    }
  }
  openObjects(spec)
  for (const operations of Object.values<Json>(spec.paths ?? {})) {
    for (const method of methods) {
      const operation = operations[method]
      if (operation === undefined) continue
      const parameters: Array<Json> = (operation.parameters ??= [])
      for (const parameter of parameters) {
        const rule = parameter.in === "path" ? parameterPatterns[parameter.name] : undefined
        if (rule === undefined) continue
        parameter.schema = { ...parameter.schema, pattern: rule.pattern }
        parameter.description ??= rule.description
      }
      // Path names outside their pattern are 404 (no such name), not 400: only bodies, queries and headers count.
      const validated = operation.requestBody !== undefined || parameters.some((parameter) => parameter.in !== "path")
      if (validated && operation.responses?.["400"] === undefined) {
        addResponse(operation, "400", badRequest, "Invalid input (`bad_request`)")
      }
      const signedIn = (operation.security ?? spec.security ?? []).some((entry: Json) => "bearer" in entry)
      if (method === "post" && signedIn) {
        parameters.push(idempotencyHeader)
        addResponse(
          operation,
          "422",
          envelope(Errors.IdempotencyKeyReused.code, "The Idempotency-Key was first used for another request."),
          "Idempotency-Key reused (`idempotency_key_reused`)"
        )
        addResponse(
          operation,
          "409",
          envelope(Errors.IdempotencyKeyInUse.code, "The first request of this Idempotency-Key is still running."),
          "Conflict"
        )
        if (operation.responses?.["400"] === undefined) {
          addResponse(
            operation,
            "400",
            envelope(Errors.BadRequest.code, "A malformed Idempotency-Key."),
            "Invalid input"
          )
        }
      }
    }
  }
  return spec
}

/** The document's annotations: `polish` always, `servers` where the public URL is known (the running server). */
export const documentAnnotations = (publicUrl?: string) =>
  OpenApi.annotations({
    transform: polish,
    ...(publicUrl === undefined
      ? {}
      : { servers: [{ url: publicUrl, description: "This deployment (SERVICE_PUBLIC_URL); every path starts /v1." }] })
  })
