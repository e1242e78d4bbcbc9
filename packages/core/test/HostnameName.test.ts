import { assert, describe, it } from "@effect/vitest"
import * as Errors from "@hostplane/core/errors/index"
import * as Hostnames from "@hostplane/core/hostnames/index"
import * as Kernel from "@hostplane/core/kernel/index"
import { Effect, Layer, Option, Result, Schema } from "effect"

const settings = {
  ...Kernel.makeSettings({
    appDomain: "apps.hostplane.dev",
    serviceDomains: ["hostplane.dev", "hostplane-usercontent.net"]
  }),
  fallbackOrigin: "fallback.apps.hostplane.dev"
}

const accepted: ReadonlyArray<readonly [string, string]> = [
  ["www.example.com", "www.example.com"],
  ["WWW.Example.COM", "www.example.com"],
  ["  shop.example.com \n", "shop.example.com"],
  ["example.com.", "example.com"],
  ["bücher.example", "xn--bcher-kva.example"],
  ["BÜCHER.example", "xn--bcher-kva.example"],
  ["xn--bcher-kva.example", "xn--bcher-kva.example"],
  ["ｗｗｗ.example.com", "www.example.com"],
  ["a-b.c-d.example", "a-b.c-d.example"],
  ["123.example.com", "123.example.com"],
  [`${"a".repeat(63)}.example.com`, `${"a".repeat(63)}.example.com`],
  ["hostplane.dev.example.com", "hostplane.dev.example.com"],
  ["nothostplane.dev", "nothostplane.dev"]
]

const refused: ReadonlyArray<readonly [string, string, Hostnames.HostnameProblem]> = [
  ["empty", "   ", "empty"],
  ["wildcard", "*.example.com", "wildcard"],
  ["wildcard inside", "www.*.example.com", "wildcard"],
  ["IPv4 address", "192.0.2.10", "ip_address"],
  ["IPv4 address, trailing dot", "192.0.2.10.", "ip_address"],
  ["IPv4 in hex form", "0x7f.1", "ip_address"],
  ["IPv6 address", "2001:db8::1", "ip_address"],
  ["bracketed IPv6", "[::1]", "ip_address"],
  ["numeric top-level label", "example.123", "numeric_tld"],
  ["single label", "localhost", "single_label"],
  ["single label with trailing dot", "com.", "single_label"],
  ["the app domain", "apps.hostplane.dev", "service_domain"],
  ["under the app domain", "shop.apps.hostplane.dev", "service_domain"],
  ["under the app domain, uppercase and trailing dot", "Shop.APPS.hostplane.dev.", "service_domain"],
  ["under another service domain", "x.hostplane-usercontent.net", "service_domain"],
  ["another service domain itself", "hostplane.dev", "service_domain"],
  ["the fallback origin", "fallback.apps.hostplane.dev", "service_domain"],
  ["label over 63", `${"a".repeat(64)}.example.com`, "label_too_long"],
  ["name over 253", `${Array.from({ length: 5 }, () => "a".repeat(60)).join(".")}.com`, "name_too_long"],
  ["underscore", "my_site.example.com", "invalid_character"],
  ["space", "my site.example.com", "invalid_character"],
  ["port", "example.com:8080", "invalid_character"],
  ["path", "example.com/shop", "invalid_character"],
  ["URL", "https://example.com", "invalid_character"],
  ["user info", "user@example.com", "invalid_character"],
  ["percent escape", "ex%41mple.com", "invalid_character"],
  ["leading hyphen", "-shop.example.com", "hyphen"],
  ["trailing hyphen", "shop-.example.com", "hyphen"],
  ["empty label", "www..example.com", "empty_label"],
  ["two trailing dots", "example.com..", "empty_label"],
  ["leading dot", ".example.com", "empty_label"],
  ["invalid punycode", "xn--zz.example", "invalid_idn"],
  ["disallowed code point", "exa\u200bmple.com\u2028x", "invalid_idn"]
]

describe("normalizeHostname (spec 4.4: normalized to lowercase punycode)", () => {
  for (const [input, expected] of accepted) {
    it(`accepts ${JSON.stringify(input)} as ${expected}`, () => {
      const result = Hostnames.normalizeHostnameResult(input, settings)
      assert.deepStrictEqual(result, Result.succeed(expected))
    })
  }

  for (const [label, input, reason] of refused) {
    it(`refuses ${label} (${JSON.stringify(input)}) with 400 bad_request, reason ${reason}`, () => {
      const result = Hostnames.normalizeHostnameResult(input, settings)
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) {
        const error = result.failure
        assert.instanceOf(error, Errors.BadRequest)
        assert.strictEqual(Errors.BadRequest.code, "bad_request")
        assert.deepStrictEqual(error.details, { reason })
        assert.include(error.message, "Hostname ")
      }
    })
  }

  it("wildcards and names under the service's own domains are refused with a message that says why", () => {
    const wildcard = Hostnames.normalizeHostnameResult("*.example.com", settings)
    const own = Hostnames.normalizeHostnameResult("shop.apps.hostplane.dev", settings)
    assert.isTrue(Result.isFailure(wildcard) && wildcard.failure.message.includes("wildcard"))
    assert.isTrue(Result.isFailure(own) && own.failure.message.includes("under apps.hostplane.dev"))
  })

  it("the app domain is refused even when SERVICE_DOMAINS leaves it out", () => {
    const bare = { appDomain: "apps.example.net", serviceDomains: ["example.org"], fallbackOrigin: "edge.example.org" }
    assert.isTrue(Result.isFailure(Hostnames.normalizeHostnameResult("x.apps.example.net", bare)))
    assert.isTrue(Result.isFailure(Hostnames.normalizeHostnameResult("www.example.org", bare)))
    assert.deepStrictEqual(Hostnames.normalizeHostnameResult("x.example.net", bare), Result.succeed("x.example.net"))
  })

  it.effect("yields inside Effect.gen and fails with BadRequest", () =>
    Effect.gen(function* () {
      const name = yield* Hostnames.normalizeHostname("Bücher.Example.", settings)
      assert.strictEqual(name, "xn--bcher-kva.example")
      const error = yield* Effect.flip(Hostnames.normalizeHostname("1.2.3.4", settings))
      assert.strictEqual(error._tag, "BadRequest")
    })
  )
})

describe("verificationRecord (decisions.md: verify is the TXT guidance record)", () => {
  it("is a TXT record at _service-verify.<host> with value service-verify=<token>", () => {
    assert.deepStrictEqual(Hostnames.verificationRecord("shop.example.com", "k3x9q"), {
      type: "TXT",
      name: "_service-verify.shop.example.com",
      value: "service-verify=k3x9q"
    })
  })
})

interface FakeDns {
  readonly txt?: Record<string, ReadonlyArray<string> | Hostnames.DnsLookupReason>
  readonly cname?: Record<string, string | null | Hostnames.DnsLookupReason>
  readonly zones?: Record<string, string>
}

const isReason = Schema.is(Hostnames.DnsLookupReason)

/** Answers from fixed tables; a name missing from a table is NXDOMAIN. */
const fakeDns = (dns: FakeDns) =>
  Layer.mergeAll(
    Layer.succeed(Hostnames.DnsResolver, {
      txt: (name) => {
        const answer = dns.txt?.[name] ?? "nxdomain"
        return isReason(answer)
          ? Effect.fail(new Hostnames.DnsLookupError({ reason: answer, name, type: "TXT", message: answer }))
          : Effect.succeed(answer)
      },
      cname: (name) => {
        const answer = dns.cname !== undefined && name in dns.cname ? (dns.cname[name] ?? null) : "nxdomain"
        return isReason(answer)
          ? Effect.fail(new Hostnames.DnsLookupError({ reason: answer, name, type: "CNAME", message: answer }))
          : Effect.succeed(Option.fromNullishOr(answer))
      }
    }),
    dns.zones === undefined
      ? Hostnames.HostedZones.layerNone
      : Layer.succeed(Hostnames.HostedZones, {
          ownerOrgOf: (host) => {
            const zone = Object.keys(dns.zones ?? {}).find((zone) => host === zone || host.endsWith(`.${zone}`))
            return Effect.succeed(zone === undefined ? Option.none() : Option.fromNullishOr(dns.zones?.[zone]))
          },
          link: () => Effect.void,
          unlink: () => Effect.void
        })
  )

const host = "shop.example.com"
const verify = Hostnames.verificationRecord(host, "tok123")
const check = (dns: FakeDns, orgId = Kernel.makeId("org", "org_a")) =>
  Hostnames.checkOwnership({ host, orgId, verify, fallbackOrigin: "fallback.apps.hostplane.dev" }).pipe(
    Effect.provide(fakeDns(dns))
  )

describe("checkOwnership (spec 4.4 verify: zone, TXT or CNAME)", () => {
  it.effect("passes by zone when the name is in a zone the service hosts for the same org", () =>
    Effect.gen(function* () {
      const result = yield* check({ zones: { "example.com": "org_a" } })
      assert.deepStrictEqual(result, { verified: true, method: "zone" })
    })
  )

  it.effect("a zone of another org is no proof", () =>
    Effect.gen(function* () {
      const result = yield* check({ zones: { "example.com": "org_b" } })
      assert.isFalse(result.verified)
    })
  )

  it.effect("passes by TXT when _service-verify.<host> holds the expected value among others", () =>
    Effect.gen(function* () {
      const result = yield* check({ txt: { [verify.name]: ["unrelated", "service-verify=tok123"] } })
      assert.deepStrictEqual(result, { verified: true, method: "txt" })
    })
  )

  it.effect("passes by CNAME to the fallback origin, case and trailing dot ignored", () =>
    Effect.gen(function* () {
      const result = yield* check({ cname: { [host]: "Fallback.Apps.Hostplane.DEV." } })
      assert.deepStrictEqual(result, { verified: true, method: "cname" })
    })
  )

  it.effect("fails with the observed TXT values and CNAME target in lastError form", () =>
    Effect.gen(function* () {
      const result = yield* check({
        txt: { [verify.name]: ["service-verify=old", "abc"] },
        cname: { [host]: "shops.myshopify.com" }
      })
      assert.deepStrictEqual(result, {
        verified: false,
        observed:
          'TXT _service-verify.shop.example.com: "service-verify=old", "abc" (expected "service-verify=tok123"); ' +
          "CNAME shop.example.com: shops.myshopify.com (expected fallback.apps.hostplane.dev)"
      })
    })
  )

  it.effect("fails with what the lookups said when nothing is there", () =>
    Effect.gen(function* () {
      const missing = yield* check({ cname: { [host]: null } })
      assert.deepStrictEqual(missing, {
        verified: false,
        observed:
          'TXT _service-verify.shop.example.com: no such name (NXDOMAIN) (expected "service-verify=tok123"); ' +
          "CNAME shop.example.com: none (expected fallback.apps.hostplane.dev)"
      })
      const broken = yield* check({ txt: { [verify.name]: "timeout" }, cname: { [host]: "servfail" } })
      assert.deepStrictEqual(broken, {
        verified: false,
        observed:
          'TXT _service-verify.shop.example.com: lookup timed out (expected "service-verify=tok123"); ' +
          "CNAME shop.example.com: the resolver failed (SERVFAIL) (expected fallback.apps.hostplane.dev)"
      })
    })
  )
})
