import { Errors } from "@hostplane/core"
import { describe, expect, it } from "vitest"

/** Spec part 7, row by row: status and codes as the contract spells them. */
const specCodes: ReadonlyArray<readonly [number, ReadonlyArray<string>]> = [
  [400, ["confirm_mismatch", "bad_request", "reserved_name", "invalid_provider"]],
  [402, ["payment_failed"]],
  [404, ["not_found", "not_granted", "user_not_found", "unknown_hostname", "no_ref", "no_path"]],
  [409, ["org_not_empty", "personal_org", "active_subscription"]],
  [409, ["already_member", "too_many_invites", "last_admin"]],
  [409, ["invite_used", "invite_revoked", "invite_expired"]],
  [409, ["project_name_taken", "hostname_taken", "project_limit", "op_in_flight"]],
  [409, ["email_unavailable", "email_address_taken"]],
  [409, ["database_required"]],
  [409, ["suspended", "operation_in_progress", "not_abortable"]],
  [409, ["domain_taken", "domain_unavailable"]],
  [409, ["zone_taken", "managed_rrset", "cname_conflict", "dnssec_off"]],
  [409, ["repo_exists", "ssh_key_exists"]],
  [409, ["already_pro", "not_pro", "no_payment_method"]],
  [422, ["registrar_rejected"]],
  [501, ["billing_off"]],
  [502, ["saga_incomplete", "registrar_error", "billing_unavailable", "export_failed"]],
  [
    503,
    [
      "no_core",
      "dns_not_configured",
      "registrar_not_configured",
      "no_home_node",
      "no_node_admin",
      "git_unavailable",
      "git_unreachable"
    ]
  ]
]

/** decisions.md part 1: the codes of statuses the spec leaves bare. */
const bareCodes: Record<string, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  payload_too_large: 413,
  method_not_allowed: 405
}

/** Further codes decisions.md names, which the table may hold once their area exists. */
const decidedCodes: Record<string, number> = {
  slug_taken: 409,
  invalid_bundle: 400,
  not_registered_here: 409,
  unknown_model: 400,
  daily_limit: 402,
  insufficient_balance: 402,
  rate_limited: 429,
  mail_rate_limited: 429,
  node_api_off: 501,
  ai_unavailable: 503,
  idempotency_key_reused: 422,
  // Our own (decisions.md: unlisted conflicts get a specific code): a retry waited too long for the first request.
  idempotency_key_in_use: 409,
  // Our own: the mail webhook without SERVICE_MAIL_TOPIC_ARN (spec 4.8 names the status only).
  mail_webhook_off: 501,
  // Our own: the node mail relay's transport refused or failed, or the host gave the services none.
  mail_send_failed: 502,
  mail_unavailable: 503,
  // Our own: the AI upstream failed or refused the call (spec part 7: 502 is an upstream failure).
  ai_upstream_error: 502,
  // decisions.md part 13: the edge's answers for a project's worker.
  worker_exception: 500,
  worker_unavailable: 503,
  worker_timeout: 504,
  // Our own: the node API's end-user session lookup (`POST /v1/node/auth/user`) when the project's database did not
  // answer; the edge's sign-in answers the same code.
  auth_unavailable: 503,
  // Our own (decisions.md part 15): the S3 bucket behind the artifact store did not answer or lost an object.
  artifact_store_unavailable: 503,
  internal: 500
}

const table = Errors.ErrorCode as Record<string, { readonly status: number }>
type ErrorClass = (typeof Errors.all)[number]
/** Every class the errors module exports that carries a wire code. */
const exported = Object.entries(Errors).filter(
  (entry): entry is [string, ErrorClass] =>
    typeof entry[1] === "function" && typeof Reflect.get(entry[1], "code") === "string"
)

describe("the error-code table and the exported errors", () => {
  it("every exported error class is in Errors.all, and Errors.all holds nothing else", () => {
    expect(new Set(Errors.all).size).toBe(Errors.all.length)
    expect(new Set(Errors.all)).toEqual(new Set(exported.map(([, errorClass]) => errorClass)))
  })

  it("each error class's code is in the table, and each code has exactly one class", () => {
    const byCode = new Map<string, Array<string>>()
    for (const [name, errorClass] of exported) {
      expect(table[errorClass.code], `${name}.code ${errorClass.code}`).toBeDefined()
      byCode.set(errorClass.code, [...(byCode.get(errorClass.code) ?? []), name])
    }
    for (const code of Object.keys(table)) expect(byCode.get(code), code).toHaveLength(1)
  })

  it("each class is exported under its tag, and the tags are distinct", () => {
    for (const [name, errorClass] of exported) expect(new errorClass({ message: "" })._tag).toBe(name)
  })

  it("every code of spec part 7 is in the table with the spec's status", () => {
    for (const [status, codes] of specCodes) {
      for (const code of codes) expect(table[code]?.status, code).toBe(status)
    }
  })

  it("the bare-status codes of decisions.md are in the table with their status", () => {
    for (const [code, status] of Object.entries(bareCodes)) expect(table[code]?.status, code).toBe(status)
  })

  it("the table holds no code the spec or decisions.md do not spell that way", () => {
    const known = new Map<string, number>([
      ...specCodes.flatMap(([status, codes]) => codes.map((code) => [code, status] as const)),
      ...Object.entries(bareCodes),
      ...Object.entries(decidedCodes)
    ])
    for (const [code, { status }] of Object.entries(table)) expect(known.get(code), code).toBe(status)
  })

  it("statusOf reads the table", () => {
    for (const [code, { status }] of Object.entries(table))
      expect(Errors.statusOf(code as Errors.ErrorCode)).toBe(status)
  })
})
