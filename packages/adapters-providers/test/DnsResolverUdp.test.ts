import { assert, describe, it } from "@effect/vitest"
import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import * as Hostnames from "@hostplane/core/hostnames/index"
import * as Kernel from "@hostplane/core/kernel/index"
import { FakeDnsServer } from "@hostplane/testkit/dns/FakeDnsServer"
import { ConfigProvider, Effect, Option } from "effect"

/** A resolver asking `servers`; tests that expect a timeout pass a short limit. */
const resolverFor = (servers: ReadonlyArray<string>, timeout = 1000) =>
  DnsResolverUdp.make({ servers, timeout: `${timeout} millis` }).pipe(Effect.orDie)

const setupWith = (timeout?: number) =>
  Effect.gen(function* () {
    const server = yield* FakeDnsServer.make()
    const resolver = yield* resolverFor([server.address], timeout)
    return { server, resolver }
  })
const setup = setupWith()

const long = Array.from({ length: 600 }, (_, i) => String.fromCharCode(97 + (i % 26))).join("")

describe("DnsResolverUdp against FakeDnsServer over loopback", () => {
  it.live("TXT: one record, asked over UDP with recursion desired", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.set("_service-verify.shop.example.com", "TXT", ["service-verify=abc"])
      const values = yield* resolver.txt("_service-verify.Shop.Example.com.")
      assert.deepStrictEqual(values, ["service-verify=abc"])
      const queries = yield* server.queries
      assert.strictEqual(queries.length, 1)
      assert.strictEqual(queries[0]?.transport, "udp")
      assert.strictEqual(queries[0]?.type, "TXT")
      assert.isTrue(queries[0]?.recursionDesired)
    })
  )

  it.live("TXT: a value over 255 bytes travels as several strings and comes back joined; records stay apart", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.set("big.example.com", "TXT", [long, ["v=spf1 ", "include:example.net ", "-all"]])
      const values = yield* resolver.txt("big.example.com")
      assert.deepStrictEqual(values, [long, "v=spf1 include:example.net -all"])
    })
  )

  it.live("TXT: a CNAME in the answer is followed to the TXT records of its target", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.set("_service-verify.shop.example.com", "CNAME", ["verify.dns-host.example.net"])
      yield* server.set("verify.dns-host.example.net", "TXT", ["service-verify=via-alias"])
      yield* server.set("unrelated.example.net", "TXT", ["nope"])
      const values = yield* resolver.txt("_service-verify.shop.example.com")
      assert.deepStrictEqual(values, ["service-verify=via-alias"])
    })
  )

  it.live("CNAME: the target, lowercase without the trailing dot; none when the name has no CNAME", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.set("shop.example.com", "CNAME", ["Fallback.Apps.Example.NET."])
      yield* server.set("apex.example.com", "A", ["192.0.2.1"])
      assert.deepStrictEqual(yield* resolver.cname("shop.example.com"), Option.some("fallback.apps.example.net"))
      assert.deepStrictEqual(yield* resolver.cname("apex.example.com"), Option.none())
    })
  )

  it.live("NXDOMAIN fails with reason nxdomain; a name without TXT fails with nodata", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.set("apex.example.com", "A", ["192.0.2.1"])
      const missing = yield* Effect.flip(resolver.txt("_service-verify.nowhere.example.com"))
      assert.strictEqual(missing._tag, "DnsLookupError")
      assert.strictEqual(missing.reason, "nxdomain")
      assert.strictEqual(missing.name, "_service-verify.nowhere.example.com")
      assert.strictEqual((yield* Effect.flip(resolver.cname("nowhere.example.com"))).reason, "nxdomain")
      assert.strictEqual((yield* Effect.flip(resolver.txt("apex.example.com"))).reason, "nodata")
      assert.strictEqual((yield* server.queries).length, 3)
    })
  )

  it.live("a silent server: one retry, then reason timeout", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setupWith(250)
      yield* server.configure({ silent: true })
      const error = yield* Effect.flip(resolver.txt("_service-verify.shop.example.com"))
      assert.strictEqual(error.reason, "timeout")
      const queries = yield* server.queries
      assert.deepStrictEqual(
        queries.map((query) => query.transport),
        ["udp", "udp"]
      )
      assert.notStrictEqual(queries[0]?.id, queries[1]?.id)
    })
  )

  it.live("a lost first answer is recovered by the retry", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.set("_service-verify.shop.example.com", "TXT", ["service-verify=abc"])
      yield* server.configure({ dropNext: 1 })
      assert.deepStrictEqual(yield* resolver.txt("_service-verify.shop.example.com"), ["service-verify=abc"])
      assert.strictEqual((yield* server.queries).length, 2)
    })
  )

  it.live("the retry goes to the next server when there are several", () =>
    Effect.gen(function* () {
      const dead = yield* FakeDnsServer.make({ silent: true })
      const live = yield* FakeDnsServer.make()
      yield* live.set("shop.example.com", "CNAME", ["fallback.apps.example.net"])
      const resolver = yield* resolverFor([dead.address, live.address])
      assert.deepStrictEqual(yield* resolver.cname("shop.example.com"), Option.some("fallback.apps.example.net"))
      assert.strictEqual((yield* dead.queries).length, 1)
      assert.strictEqual((yield* live.queries).length, 1)
    })
  )

  it.live("a truncated UDP answer is asked again over TCP", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.configure({ truncate: true })
      yield* server.set("_service-verify.shop.example.com", "TXT", ["service-verify=abc", long])
      const values = yield* resolver.txt("_service-verify.shop.example.com")
      assert.deepStrictEqual(values, ["service-verify=abc", long])
      assert.deepStrictEqual(
        (yield* server.queries).map((query) => query.transport),
        ["udp", "tcp"]
      )
    })
  )

  it.live("an answer larger than the UDP payload size comes over TCP without forcing", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      const records = Array.from({ length: 4 }, (_, i) => `${i}:${long}`)
      yield* server.set("many.example.com", "TXT", records)
      assert.deepStrictEqual(yield* resolver.txt("many.example.com"), records)
      assert.deepStrictEqual(
        (yield* server.queries).map((query) => query.transport),
        ["udp", "tcp"]
      )
    })
  )

  it.live("an answer with a mismatched id is ignored", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.configure({ forgeIds: true })
      yield* server.set("_service-verify.shop.example.com", "TXT", ["service-verify=abc"])
      assert.deepStrictEqual(yield* resolver.txt("_service-verify.shop.example.com"), ["service-verify=abc"])
      assert.strictEqual((yield* server.queries).length, 1)
    })
  )

  it.live("SERVFAIL and REFUSED fail with their reasons after the retry", () =>
    Effect.gen(function* () {
      const { server, resolver } = yield* setup
      yield* server.setRcode("broken.example.com", "SERVFAIL")
      yield* server.setRcode("closed.example.com", "REFUSED")
      assert.strictEqual((yield* Effect.flip(resolver.txt("broken.example.com"))).reason, "servfail")
      assert.strictEqual((yield* Effect.flip(resolver.cname("closed.example.com"))).reason, "refused")
      assert.strictEqual((yield* server.queries).length, 4)
    })
  )

  it.live("no listener on the port: reason network, without waiting for the timeout", () =>
    Effect.gen(function* () {
      const port = yield* Effect.scoped(Effect.map(FakeDnsServer.make(), (server) => server.port))
      const resolver = yield* resolverFor([`127.0.0.1:${port}`], 200)
      const error = yield* Effect.flip(resolver.txt("shop.example.com"))
      assert.strictEqual(error.reason, "network")
    })
  )
})

describe("DnsResolverUdp settings", () => {
  it("reads ip, ip:port and IPv6 server forms", () => {
    assert.deepStrictEqual(DnsResolverUdp.parseServer("1.1.1.1"), Option.some({ host: "1.1.1.1", port: 53, family: 4 }))
    assert.deepStrictEqual(
      DnsResolverUdp.parseServer(" 127.0.0.1:5353 "),
      Option.some({ host: "127.0.0.1", port: 5353, family: 4 })
    )
    assert.deepStrictEqual(
      DnsResolverUdp.parseServer("2606:4700:0:0:0:0:0:1111"),
      Option.some({ host: "2606:4700::1111", port: 53, family: 6 })
    )
    assert.deepStrictEqual(DnsResolverUdp.parseServer("[::1]:53"), Option.some({ host: "::1", port: 53, family: 6 }))
    for (const bad of ["dns.google", "1.1.1.1:0", "1.1.1.1:70000", "[::1", "", "1.1.1"]) {
      assert.isTrue(Option.isNone(DnsResolverUdp.parseServer(bad)), bad)
    }
  })

  it.effect("a server that is not an IP address fails the layer with a ConfigError", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(DnsResolverUdp.make({ servers: ["dns.google"] }))
      assert.strictEqual(error._tag, "ConfigError")
      assert.include(error.message, "SERVICE_DNS_RESOLVERS")
      assert.strictEqual((yield* Effect.flip(DnsResolverUdp.make({ servers: [] })))._tag, "ConfigError")
    })
  )

  it.live("layerConfig asks the servers of SERVICE_DNS_RESOLVERS", () =>
    Effect.gen(function* () {
      const server = yield* FakeDnsServer.make()
      yield* server.set("shop.example.com", "CNAME", ["fallback.apps.example.net"])
      const target = yield* Effect.gen(function* () {
        const resolver = yield* Hostnames.DnsResolver
        return yield* resolver.cname("shop.example.com")
      }).pipe(
        Effect.provide(DnsResolverUdp.layerConfig),
        Effect.provide(
          ConfigProvider.layer(ConfigProvider.fromEnvRecord({ SERVICE_DNS_RESOLVERS: ` ${server.address} ,` }))
        )
      )
      assert.deepStrictEqual(target, Option.some("fallback.apps.example.net"))
    })
  )
})

describe("checkOwnership over real DNS (spec 4.4 verify)", () => {
  const host = "shop.example.com"
  const verify = Hostnames.verificationRecord(host, "tok123")
  const check = (server: FakeDnsServer["Service"]) =>
    Hostnames.checkOwnership({
      host,
      orgId: Kernel.makeId("org", "org_a"),
      verify,
      fallbackOrigin: "fallback.apps.example.net"
    }).pipe(
      Effect.provide(DnsResolverUdp.layer({ servers: [server.address], timeout: "1 second" })),
      Effect.provide(Hostnames.HostedZones.layerNone),
      Effect.orDie
    )

  it.live("TXT, then CNAME, each prove ownership; with neither, lastError says what DNS showed", () =>
    Effect.gen(function* () {
      const server = yield* FakeDnsServer.make()
      yield* server.set(host, "A", ["192.0.2.1"])
      assert.deepStrictEqual(yield* check(server), {
        verified: false,
        observed:
          'TXT _service-verify.shop.example.com: no such name (NXDOMAIN) (expected "service-verify=tok123"); ' +
          "CNAME shop.example.com: none (expected fallback.apps.example.net)"
      })

      yield* server.set(verify.name, "TXT", [verify.value])
      assert.deepStrictEqual(yield* check(server), { verified: true, method: "txt" })

      yield* server.clear
      yield* server.set(host, "CNAME", ["FALLBACK.apps.example.net."])
      assert.deepStrictEqual(yield* check(server), { verified: true, method: "cname" })
    })
  )
})
