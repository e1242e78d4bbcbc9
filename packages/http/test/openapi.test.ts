import { Kernel, Orgs, Secrets } from "@hostplane/core"
import { ruleOf } from "@hostplane/api/auth/Rules"
import { layerMemory } from "@hostplane/testkit"
import { Layer } from "effect"
import { describe, expect, it } from "vitest"
import { hostnamePattern } from "@hostplane/api/server/OpenApiDocument"
import { orgEndpoints } from "./support/specRoles.ts"
import { useSuite } from "./support/TestServer.ts"

type Json = Record<string, any>

const methods = ["get", "put", "post", "delete", "patch"]

/** Every operation of the served document, as `[METHOD path, operation]`. */
const operationsOf = (document: Json): Array<[string, Json]> =>
  Object.entries<Json>(document.paths).flatMap(([path, item]) =>
    methods
      .filter((method) => item[method] !== undefined)
      .map((method): [string, Json] => [`${method.toUpperCase()} ${path}`, item[method]])
  )

/** Every `additionalProperties` value anywhere in the document. */
const closedObjects = (node: unknown, at = "#"): Array<string> => {
  if (Array.isArray(node)) return node.flatMap((item, i) => closedObjects(item, `${at}/${i}`))
  if (node === null || typeof node !== "object") return []
  return Object.entries(node as Json).flatMap(([key, value]) =>
    key === "additionalProperties" && value === false ? [at] : closedObjects(value, `${at}/${key}`)
  )
}

const codesOf = (response: Json | undefined): Array<string> =>
  JSON.stringify(response ?? {}).match(/"enum":\["[a-z_]+"\]/g) ?? []

/**
 * What `listed` ([operation, { status: codes that must be among its enum values (none: the status alone) }]) finds
 * missing in the document: an operation, a status, or a code, inline or through the error's component.
 */
const undeclared = (doc: Json, listed: ReadonlyArray<[string, Record<string, Array<string>>]>): Array<string> => {
  const operations = new Map(operationsOf(doc))
  const missing: Array<string> = []
  for (const [name, statuses] of listed) {
    const operation = operations.get(name)
    if (operation === undefined) {
      missing.push(`${name}: not in the document`)
      continue
    }
    for (const [status, codes] of Object.entries(statuses)) {
      const response = operation.responses[status]
      if (response === undefined) missing.push(`${name}: no ${status}`)
      for (const code of codes) {
        const inline = codesOf(response).includes(`"enum":["${code}"]`)
        const ref = JSON.stringify(response ?? {}).includes(`"#/components/schemas/Error_${code}Encoded"`)
        const component = doc.components.schemas[`Error_${code}Encoded`]
        if (!inline && !(ref && codesOf(component).includes(`"enum":["${code}"]`))) {
          missing.push(`${name}: ${status} without ${code}`)
        }
      }
    }
  }
  return missing
}

describe("GET /v1/openapi.json describes what the server does", () => {
  const suite = useSuite(() => Layer.fresh(layerMemory), { settings: { publicUrl: "https://console.example.test" } })
  const document = async () => (await suite.api.get("/v1/openapi.json")).body as Json

  it("every operation has a summary, and ids are unique", async () => {
    const operations = operationsOf(await document())
    expect(operations.length).toBeGreaterThan(30)
    for (const [name, operation] of operations) {
      expect(typeof operation.summary === "string" && operation.summary.length > 3, name).toBe(true)
    }
    expect(new Set(operations.map(([, operation]) => operation.operationId)).size).toBe(operations.length)
  })

  it("an org operation states its role once, from its rule, with 401 and 404 (403 above viewer)", async () => {
    const rules = new Map(
      orgEndpoints.map((endpoint) => [`${endpoint.method} /v1${endpoint.path.slice(3)}`, ruleOf(endpoint)!])
    )
    const operations = operationsOf(await document()).filter(([name]) => name.includes("/v1/orgs/{orgSlug}"))
    expect(operations.length).toBe(orgEndpoints.length)
    const role = /\b(?:viewer|member|admin)\b(?: or higher)?[.,;]|^(?:viewer|member|admin)\b/i
    for (const [name, operation] of operations) {
      const rule = rules.get(name.replace(/\{(\w+)\}/g, ":$1"))!
      const sentence = Kernel.Rule.roleText(rule)
      expect([name, operation.description.startsWith(sentence)]).toEqual([name, true])
      // The prose after the generated sentence repeats no role.
      expect([name, role.test(operation.description.slice(sentence.length).trim())]).toEqual([name, false])
      const minimum = rule._tag === "SubjectRule" ? rule.others.minimum : rule.minimum
      const statuses = ["401", "404", ...(minimum === "viewer" ? [] : ["403"])]
      expect([name, statuses.filter((status) => operation.responses[status] === undefined)]).toEqual([name, []])
    }
  })

  it("names the deployment's public URL as its server; the paths carry /v1", async () => {
    const doc = await document()
    expect(doc.servers).toEqual([{ url: "https://console.example.test", description: expect.any(String) }])
    for (const path of Object.keys(doc.paths)) expect(path.startsWith("/v1/")).toBe(true)
  })

  it("every operation with a body, query or header answers 400 bad_request", async () => {
    for (const [name, operation] of operationsOf(await document())) {
      const validated =
        operation.requestBody !== undefined || (operation.parameters ?? []).some((p: Json) => p.in !== "path")
      if (!validated) continue
      expect(operation.responses["400"], name).toBeDefined()
      expect(JSON.stringify(operation.responses["400"]), name).toMatch(/bad_request/)
    }
  })

  it("no object is closed: unknown fields are accepted (and ignored), as the API does", async () => {
    expect(closedObjects(await document())).toEqual([])
    const reply = await suite.api.post("/v1/orgs", { name: "Open", extra: true }, { token: suite.admin.token })
    expect(reply.status).toBe(201)
  })

  it("the name patterns the server enforces are patterns: org slug, project name, secret name, hostname", async () => {
    const doc = await document()
    const expected: Record<string, string> = {
      orgSlug: Orgs.slugPattern.source,
      projectName: Orgs.slugPattern.source,
      secretName: Secrets.secretNamePattern.source,
      host: hostnamePattern
    }
    const seen = new Set<string>()
    for (const [name, operation] of operationsOf(doc)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== "path" || expected[parameter.name] === undefined) continue
        seen.add(parameter.name)
        expect(parameter.schema.pattern, `${name} ${parameter.name}`).toBe(expected[parameter.name])
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(expected).sort())
    const body = (path: string) => doc.paths[path].post.requestBody.content["application/json"].schema
    expect(body("/v1/orgs").properties.slug.pattern).toBe(Orgs.slugPattern.source)
    expect(body("/v1/orgs/{orgSlug}/projects").properties.name.pattern).toBe(Orgs.slugPattern.source)
    // The patterns are the server's own: a name outside one is refused.
    expect(new RegExp(hostnamePattern).test("www.example.com")).toBe(true)
    expect(new RegExp(hostnamePattern).test("WWW.example.com")).toBe(false)
    const bad = await suite.api.post("/v1/orgs", { name: "x", slug: "Not-A-Slug" }, { token: suite.admin.token })
    expect(bad.status).toBe(400)
  })

  it("sign-in is the bearer scheme (so the docs' examples send Authorization: Bearer), never Basic", async () => {
    const doc = await document()
    expect(doc.components.securitySchemes).toEqual({
      bearer: { type: "http", scheme: "bearer", description: expect.any(String) }
    })
    const docs = await suite.api.get("/v1/docs")
    expect(docs.status).toBe(200)
    // The page renders the document it embeds: the same bearer scheme, with the deployment's server.
    const page = docs.body as string
    expect(page.includes('"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"')).toBe(true)
    expect(page.includes('"servers":[{"url":"https://console.example.test"')).toBe(true)
    expect(/"scheme":"basic"/i.test(page)).toBe(false)
  })

  it("every POST with a session takes Idempotency-Key and may answer 422 idempotency_key_reused", async () => {
    const posts = operationsOf(await document()).filter(
      ([name, operation]) => name.startsWith("POST") && (operation.security ?? []).some((s: Json) => "bearer" in s)
    )
    expect(posts.length).toBeGreaterThan(8)
    for (const [name, operation] of posts) {
      const header = (operation.parameters ?? []).find((p: Json) => p.name === "Idempotency-Key")
      expect(header, name).toMatchObject({ in: "header", required: false, schema: { maxLength: 255 } })
      expect(codesOf(operation.responses["422"]), name).toContain('"enum":["idempotency_key_reused"]')
    }
    const login = (await document()).paths["/v1/auth/dev/login"].post
    expect((login.parameters ?? []).map((p: Json) => p.name)).not.toContain("Idempotency-Key")
  })

  it("the operations of spec 4.10 and 4.15 declare every status and code the spec lists for them", async () => {
    const doc = await document()
    const project = "/v1/orgs/{orgSlug}/projects/{projectName}/ai"
    const billing = "/v1/orgs/{orgSlug}/billing"
    // [operation, { status: codes that must be among its enum values (none: the status alone) }]
    const listed: Array<[string, Record<string, Array<string>>]> = [
      ["GET /v1/ai/models", { 200: [], 401: [] }],
      [`GET ${project}`, { 200: [], 403: [], 404: [], 503: ["no_core"] }],
      [`POST ${project}`, { 200: [], 403: [], 404: [], 503: ["no_core"] }],
      [`DELETE ${project}`, { 204: [], 403: [], 404: [], 503: ["no_core"] }],
      ["GET /v1/orgs/{orgSlug}/ai/credit", { 200: [], 403: [] }],
      ["GET /v1/orgs/{orgSlug}/ai/ledger", { 200: [], 403: [] }],
      ["POST /v1/orgs/{orgSlug}/ai/credit/checkout", { 200: [], 400: [], 403: [], 501: ["billing_off"] }],
      ["PUT /v1/orgs/{orgSlug}/ai/autotopup", { 200: [], 204: [], 400: [], 403: [], 409: ["no_payment_method"] }],
      [
        "POST /v1/ai/chat/completions",
        {
          200: [],
          400: ["bad_request", "unknown_model"],
          401: [],
          402: ["insufficient_balance", "daily_limit"],
          429: ["rate_limited"],
          503: ["ai_unavailable"]
        }
      ],
      ["POST /v1/hooks/billing", { 200: [], 400: [], 403: [], 501: ["billing_off"] }],
      [`GET ${billing}`, { 200: [], 403: [], 404: [] }],
      [
        `POST ${billing}/checkout`,
        { 200: [], 400: [], 403: [], 404: [], 409: ["already_pro"], 501: ["billing_off"], 502: ["billing_unavailable"] }
      ],
      [
        `POST ${billing}/portal`,
        { 200: [], 400: [], 403: [], 404: [], 501: ["billing_off"], 502: ["billing_unavailable"] }
      ],
      [`POST ${billing}/session`, { 200: [], 403: [], 404: [], 501: ["billing_off"], 502: ["billing_unavailable"] }],
      [
        `POST ${billing}/cancel`,
        { 200: [], 403: [], 404: [], 409: ["not_pro"], 501: ["billing_off"], 502: ["billing_unavailable"] }
      ]
    ]
    expect(undeclared(doc, listed)).toEqual([])
  })

  it("the operations of spec 4.4, 4.11, 4.13 and 4.14 declare every status and code the spec lists for them", async () => {
    const doc = await document()
    const project = "/v1/orgs/{orgSlug}/projects/{projectName}"
    const domains = "/v1/orgs/{orgSlug}/domains"
    const zones = "/v1/orgs/{orgSlug}/dns/zones"
    const dns = ["dns_not_configured", "no_core"]
    const listed: Array<[string, Record<string, Array<string>>]> = [
      [`GET ${project}/hostnames`, { 200: [], 403: [], 404: [] }],
      [`POST ${project}/hostnames`, { 200: [], 400: ["bad_request"], 403: [], 404: [], 409: ["hostname_taken"] }],
      [`DELETE ${project}/hostnames/{host}`, { 204: [], 400: [], 403: [], 404: [] }],
      [`POST ${project}/hostnames/{host}/verify`, { 200: [], 403: [], 404: [] }],
      [`GET ${project}/access`, { 200: [], 403: [], 404: [], 503: ["no_core"] }],
      [`PUT ${project}/access`, { 200: [], 400: [], 403: [], 404: [], 503: ["no_core"] }],
      [`POST ${project}/access/bypass`, { 200: [], 403: [], 404: [], 503: ["no_core"] }],
      [`DELETE ${project}/access/bypass`, { 204: [], 403: [], 404: [], 503: ["no_core"] }],
      ["POST /v1/access/authorize", { 200: [], 400: [], 403: [], 404: [], 503: ["no_core"] }],
      [`GET ${domains}`, { 200: [], 403: [], 404: [], 503: ["no_core"] }],
      [
        `POST ${domains}`,
        {
          200: [],
          201: [],
          400: [],
          402: ["payment_failed"],
          403: [],
          409: ["domain_taken", "domain_unavailable"],
          422: ["registrar_rejected"],
          502: ["saga_incomplete", "registrar_error"],
          503: ["no_core", "registrar_not_configured", "dns_not_configured"]
        }
      ],
      [`POST ${domains}/check`, { 200: [], 400: [], 403: [], 503: ["no_core", "registrar_not_configured"] }],
      [
        `POST ${domains}/import`,
        { 200: [], 201: [], 400: [], 403: [], 409: ["domain_taken"], 503: ["no_core", "dns_not_configured"] }
      ],
      [`GET ${domains}/{name}`, { 200: [], 403: [], 404: [] }],
      [`POST ${domains}/{name}/renew`, { 200: [], 400: [], 403: [], 404: [] }],
      [`POST ${domains}/{name}/auto-renew`, { 200: [], 400: [], 403: [], 404: [] }],
      [`POST ${domains}/{name}/lock`, { 200: [], 400: [], 403: [], 404: [] }],
      [`POST ${domains}/{name}/auth-code`, { 200: [], 403: [], 404: [] }],
      [`POST ${domains}/{name}/sync`, { 200: [], 403: [], 404: [] }],
      [`GET ${zones}`, { 200: [], 403: [], 404: [], 503: dns }],
      [`POST ${zones}`, { 200: [], 400: [], 403: [], 404: [], 409: ["zone_taken"], 503: dns }],
      [`GET ${zones}/{zone}`, { 200: [], 403: [], 404: [], 503: dns }],
      [`DELETE ${zones}/{zone}`, { 204: [], 403: [], 404: [], 503: dns }],
      [
        `PUT ${zones}/{zone}/rrsets/{name}/{type}`,
        { 200: [], 400: [], 403: [], 404: [], 409: ["managed_rrset", "cname_conflict"], 503: dns }
      ],
      [`DELETE ${zones}/{zone}/rrsets/{name}/{type}`, { 204: [], 403: [], 404: [], 409: ["managed_rrset"], 503: dns }],
      [`POST ${zones}/{zone}/dnssec`, { 200: [], 403: [], 404: [], 503: dns }],
      [`PUT ${zones}/{zone}/dnssec/ds`, { 200: [], 400: [], 403: [], 404: [], 409: ["dnssec_off"], 503: dns }]
    ]
    expect(undeclared(doc, listed)).toEqual([])
  })

  it("answers that carry a secret declare Cache-Control: no-store", async () => {
    const doc = await document()
    const noStore = (operation: Json, status: string) => operation.responses[status].headers?.["cache-control"]
    expect(noStore(doc.paths["/v1/auth/dev/login"].post, "200").schema.enum).toEqual(["no-store"])
    expect(noStore(doc.paths["/v1/access/authorize"].post, "200").schema.enum).toEqual(["no-store"])
    expect(
      noStore(doc.paths["/v1/orgs/{orgSlug}/projects/{projectName}/access/bypass"].post, "200").schema.enum
    ).toEqual(["no-store"])
  })
})
