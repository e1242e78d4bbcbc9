import { withRules } from "../auth/Rules.ts"
import { zoneRules } from "@hostplane/core/dns/ZoneRules"
import { Dns, Errors } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../auth/Authentication.ts"
import { apiErrors } from "../errors/ApiError.ts"

const org = { orgSlug: Schema.String }
const zone = { ...org, zone: Schema.String }
const rrset = { ...zone, name: Schema.String, type: Schema.String }
const base = "/orgs/:orgSlug/dns/zones"
const describe = (description: string) => OpenApi.annotations({ description })
const unavailable = [Errors.DnsNotConfigured, Errors.NoCore] as const

/** Spec 4.14: DNS zones served by the service's name server, with rrsets and DNSSEC. */
export class DnsApi extends withRules(
  HttpApiGroup.make("dns")
    .add(
      HttpApiEndpoint.get("list", base, {
        params: org,
        success: Dns.ZoneList,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, ...unavailable)
      })
        .annotate(OpenApi.Summary, "List DNS zones")
        .annotateMerge(describe("The org's zones by name, without rrsets.")),
      HttpApiEndpoint.post("create", base, {
        params: org,
        payload: Dns.CreateZoneInput,
        success: Dns.ZoneDetail,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.ZoneTaken, ...unavailable)
      })
        .annotate(OpenApi.Summary, "Create a DNS zone")
        .annotateMerge(
          describe(
            [
              "The name is lower-cased, IDNA-encoded to punycode and stripped of a trailing dot; names under the",
              "service's own domains are 400. Idempotent: the org's existing zone answers 200 unchanged. A zone that",
              "another org holds, or the parent or child of one, is 409 `zone_taken`. A new zone has an SOA (primary: the",
              "first service name server, contact `hostmaster.<zone>.`, refresh 3600, retry 600, expire 1209600, minimum",
              "300) and an apex NS rrset of the service's name servers, both `managed_by: system`. Delegation at the",
              "registrar is still needed. Audit `dns.zone.create`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.get("get", `${base}/:zone`, {
        params: zone,
        success: Dns.ZoneDetail,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, ...unavailable)
      })
        .annotate(OpenApi.Summary, "Get a DNS zone")
        .annotateMerge(
          describe(
            "The zone with every rrset, the managed SOA and apex NS first; `dnskeys` and `ds` (computed by the " +
              "server) while DNSSEC is not `off`. `serial` is the one the name server serves."
          )
        ),
      HttpApiEndpoint.delete("remove", `${base}/:zone`, {
        params: zone,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, ...unavailable)
      })
        .annotate(OpenApi.Summary, "Delete a DNS zone")
        .annotateMerge(describe("Deletes every record with the zone; it stops being served. Audit `dns.zone.delete`.")),
      HttpApiEndpoint.put("putRrset", `${base}/:zone/rrsets/:name/:type`, {
        params: rrset,
        payload: Dns.PutRrsetInput,
        success: Dns.Rrset,
        error: apiErrors(
          Errors.NotFound,
          Errors.Forbidden,
          Errors.BadRequest,
          Errors.ManagedRrset,
          Errors.CnameConflict,
          ...unavailable
        )
      })
        .annotate(OpenApi.Summary, "Set an rrset")
        .annotateMerge(
          describe(
            [
              "Replaces the whole rrset. `{name}` is relative to the zone (`@` for the apex; a leftmost `*` is a",
              "wildcard); `{type}` one of A, AAAA, CNAME, MX, TXT, SRV, CAA, NS (below the apex: a delegation), PTR, else",
              "400. Records are zone-file RDATA; names without a trailing dot are relative to the zone and come back",
              "absolute. A, AAAA, MX, SRV and CAA are shape-checked (400 `bad_request`, the record and reason in",
              "`details`); TXT (quoted strings or bare text) comes back as quoted strings of at most 255 bytes each.",
              "`records: []` is 400; `ttl` 60..86400, 300 when omitted. An rrset is answered in one DNS message, so its",
              "records in wire form (each record's owner name, 10 bytes of type, class, TTL and length, and its RDATA) total",
              "at most 16384 bytes: more is 400 `bad_request` with `details: { limit, size }`.",
              "A CNAME at the apex, beside another type or with",
              "more than one record is 409 `cname_conflict`; the SOA and apex NS are 409 `managed_rrset`. Served within one",
              "second; the serial rises. Audit `dns.rrset.set`."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.delete("removeRrset", `${base}/:zone/rrsets/:name/:type`, {
        params: rrset,
        success: HttpApiSchema.NoContent,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.ManagedRrset, ...unavailable)
      })
        .annotate(OpenApi.Summary, "Delete an rrset")
        .annotateMerge(
          describe(
            "An rrset that does not exist is 404; the SOA and apex NS are 409 `managed_rrset`. The serial rises. " +
              "Audit `dns.rrset.delete`."
          )
        ),
      HttpApiEndpoint.post("dnssec", `${base}/:zone/dnssec`, {
        params: zone,
        payload: Dns.DnssecInput,
        success: Dns.Zone,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, ...unavailable)
      })
        .annotate(OpenApi.Summary, "Turn DNSSEC on or off")
        .annotateMerge(
          describe(
            [
              "`{ enabled: true }` on an `off` zone makes one combined ECDSA P-256 key (algorithm 13, flags 257) at",
              "once and the state becomes `signing`; the answer carries `dnskeys` and the `ds` to give the parent. Enabling",
              "while `signing` or `ds_pending` changes nothing. `{ enabled: false }` returns to `off` and deletes the key",
              "and the recorded DS; enabling later makes a new key. The serial rises when the state changes."
            ].join(" ")
          )
        ),
      HttpApiEndpoint.put("putDs", `${base}/:zone/dnssec/ds`, {
        params: zone,
        payload: Dns.DsInput,
        success: Dns.Zone,
        error: apiErrors(Errors.NotFound, Errors.Forbidden, Errors.BadRequest, Errors.DnssecOff, ...unavailable)
      })
        .annotate(OpenApi.Summary, "Record the DS at the parent")
        .annotateMerge(
          describe(
            [
              '`{ ds: ["<keytag> 13 2 <hex>"] }`: the DS records created at the parent (the parent is not',
              "queried). Each must be well-formed and match the zone's key (key tag, algorithm, SHA-256 digest), else 400.",
              "A non-empty list moves `signing` to `ds_pending` (while `ds_pending` it replaces the recorded list); `[]`",
              "keeps the state. 409 `dnssec_off` while DNSSEC is off."
            ].join(" ")
          )
        )
    )
    .middleware(Authentication)
    .annotateMerge(OpenApi.annotations({ title: "DNS", description: "Authoritative DNS zones (spec 4.14)." })),
  zoneRules
) {}
