import { withRules } from "../auth/Rules.ts"
import { domainRules } from "@hostplane/core/domains/DomainRules"
import { Domains, Errors } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { OrgRef } from "../projects/ProjectRef.ts"
import { secretSuccess } from "../server/NoStore.ts"

const base = "/orgs/:orgSlug/domains"
const domain = { ...OrgRef, name: Schema.String.annotate({ description: "The domain name (lower-case, punycode)." }) }
const describe = (description: string) => OpenApi.annotations({ description: description.replace(/\s+/g, " ") })

const access = [Errors.NotFound, Errors.Forbidden] as const
/**
 * Spec 4.13 lists 503 `no_core` on the list, purchase, check and import; in hostplane domains live in the control
 * database itself, so no answer carries it, but the document keeps the spec's contract.
 */
const core = [Errors.NoCore] as const
const registrar = [
  Errors.RegistrarNotConfigured,
  Errors.PaymentFailed,
  Errors.RegistrarRejected,
  Errors.DomainUnavailable,
  Errors.NotRegisteredHere,
  Errors.RegistrarError
] as const

/** Spec 4.13: domains bought through the registrar (Name.com API v4) or imported. */
export class DomainsApi extends withRules(
  HttpApiGroup.make("domains")
    .add(
      HttpApiEndpoint.get("list", base, {
        params: OrgRef,
        success: Domains.DomainList,
        error: apiErrors(...access, ...core)
      })
        .annotate(OpenApi.Summary, "List domains")
        .annotateMerge(describe("The org's domains by name, without history.")),
      HttpApiEndpoint.post("purchase", base, {
        params: OrgRef,
        payload: Domains.PurchaseDomainInput,
        success: [Domains.Domain.pipe(HttpApiSchema.status(201)), Domains.Domain],
        error: apiErrors(
          ...access,
          ...core,
          Errors.BadRequest,
          Errors.DnsNotConfigured,
          Errors.DomainTaken,
          Errors.SagaIncomplete,
          ...registrar
        )
      })
        .annotate(OpenApi.Summary, "Buy a domain")
        .annotateMerge(
          describe(`Spends money. Body \`{ name, years? (1..10, default 1), contact: { name, email, phone
          (+CC.NUMBER), organization?, address1, city, postalCode, country (ISO 3166 alpha-2) } }\`. The name is checked
          at the registrar first (409 \`domain_unavailable\` when not purchasable; premium names are bought at the quoted
          price), then registered with the contact in every role, the service's name servers, the transfer lock and
          registrar auto-renew on; then the org's DNS zone is created. The contact goes to the registrar only: it is
          sealed until the registrar has it, and never kept in a row, the audit log or a log line. Resending is safe at
          any point: a finished domain answers 200, an interrupted purchase resumes (201 once done), and a purchase
          whose registrar answer was lost is looked up at the registrar, never bought twice. 402 \`payment_failed\` and
          422 \`registrar_rejected\` leave nothing behind; 502 \`registrar_error\` or \`saga_incomplete\` leave the
          purchase \`registering\`, continued by a resend or in the background. 409 \`domain_taken\` when another org
          holds the name here. Audit \`domain.purchase\` (years and price only).`)
        ),
      HttpApiEndpoint.post("check", `${base}/check`, {
        params: OrgRef,
        payload: Domains.CheckDomainsInput,
        success: Domains.DomainAvailabilityList,
        error: apiErrors(...access, ...core, Errors.BadRequest, ...registrar)
      })
        .annotate(OpenApi.Summary, "Check availability and prices")
        .annotateMerge(
          describe(`It calls the registrar. Body \`{ names }\`, 1 to 50 names. Answers each name with
          \`available\`, \`premium\`, \`priceCents\` (first year) and \`renewalCents\` (one renewal year), in integer US
          cents.`)
        ),
      HttpApiEndpoint.post("import", `${base}/import`, {
        params: OrgRef,
        payload: Domains.ImportDomainInput,
        success: [Domains.Domain.pipe(HttpApiSchema.status(201)), Domains.Domain],
        error: apiErrors(...access, ...core, Errors.BadRequest, Errors.DnsNotConfigured, Errors.DomainTaken)
      })
        .annotate(OpenApi.Summary, "Import a domain registered elsewhere")
        .annotateMerge(
          describe(`No registrar call: creates the org's DNS zone for the name (DNS management starts once the
          owner points the name servers at the service's). An already imported name answers 200 unchanged. 409
          \`domain_taken\` when another org holds the name or its zone. Audit \`domain.import\`.`)
        ),
      HttpApiEndpoint.get("get", `${base}/:name`, {
        params: domain,
        success: Domains.DomainDetail,
        error: apiErrors(...access)
      })
        .annotate(OpenApi.Summary, "Get a domain with its history")
        .annotateMerge(
          describe(`Adds \`history\`, the domain's audit events newest first (\`{ action, at, userId }\`, no
          contact data, no codes). A name of another org is 404.`)
        ),
      HttpApiEndpoint.post("renew", `${base}/:name/renew`, {
        params: domain,
        payload: Domains.RenewDomainInput,
        success: Domains.Domain,
        error: apiErrors(...access, ...registrar)
      })
        .annotate(OpenApi.Summary, "Renew a domain")
        .annotateMerge(
          describe(`Body \`{ years }\` (1..10). An imported domain, or one no longer registered here, is 409
          \`not_registered_here\`. Audit \`domain.renew\`.`)
        ),
      HttpApiEndpoint.post("autoRenew", `${base}/:name/auto-renew`, {
        params: domain,
        payload: Domains.AutoRenewInput,
        success: Domains.Domain,
        error: apiErrors(...access)
      })
        .annotate(OpenApi.Summary, "Set the auto-renew preference")
        .annotateMerge(
          describe(`Body \`{ autoRenew }\`: the org's preference. Auto-renewal at the registrar stays on
          regardless.`)
        ),
      HttpApiEndpoint.post("lock", `${base}/:name/lock`, {
        params: domain,
        payload: Domains.LockDomainInput,
        success: Domains.Domain,
        error: apiErrors(...access, ...registrar)
      })
        .annotate(OpenApi.Summary, "Turn the transfer lock on or off")
        .annotateMerge(describe("Body `{ locked }`. Imported: 409 `not_registered_here`. Audit `domain.lock`.")),
      HttpApiEndpoint.post("authCode", `${base}/:name/auth-code`, {
        params: domain,
        success: secretSuccess(Domains.AuthCode),
        error: apiErrors(...access, ...registrar)
      })
        .annotate(OpenApi.Summary, "Get the transfer code")
        .annotateMerge(
          describe(`Answers \`{ authCode }\` from the registrar (not cached: \`Cache-Control: no-store\`); the code
          is never stored, logged or audited. Imported: 409 \`not_registered_here\`. Audit \`domain.auth_code\`.`)
        ),
      HttpApiEndpoint.post("sync", `${base}/:name/sync`, {
        params: domain,
        success: Domains.Domain,
        error: apiErrors(...access, ...registrar)
      })
        .annotate(OpenApi.Summary, "Re-read the domain from the registrar")
        .annotateMerge(
          describe(`Re-reads expiry, lock and name servers from the registrar (the source of truth). A domain the
          registrar account no longer holds becomes \`transferred_out\`; one found again \`active\`; one past its
          expiry \`expired\`. A daily background sync does the same for every domain. Imported: 409
          \`not_registered_here\`.`)
        )
    )
    .middleware(Authentication)
    .annotateMerge(
      OpenApi.annotations({ title: "Domains", description: "Domain registration and import (spec 4.13)." })
    ),
  domainRules
) {}
