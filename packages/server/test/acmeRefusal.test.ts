import { testAuthority } from "@hostplane/testkit"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as Https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TLSSocket } from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Pebble, startPebble } from "./support/Pebble.ts"
import { freePort, type ServerProcess, signIn, startServer } from "./support/ServerProcess.ts"

const until = async (what: string, check: () => boolean | Promise<boolean>, tries = 800) => {
  for (let i = 0; i < tries; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`gave up waiting for ${what}`)
}

/**
 * When the server logged `message` about `hostname`, in ms: its JSON lines carry the fields given beside the message
 * as the message's second part.
 */
const logged = (output: string, message: string, hostname: string) =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { message: unknown; timestamp: string })
    .filter((line) => {
      const [text, fields] = Array.isArray(line.message) ? line.message : [line.message, undefined]
      return text === message && (fields as { hostname?: string } | undefined)?.hostname === hostname
    })
    .map((line) => Date.parse(line.timestamp))

const first = 3_000

/**
 * Pebble refusing, end to end: a name its policy blocks, and a name whose HTTP-01 validation cannot connect. The
 * Hostname's `tls` shows the CA's problem detail, attempts back off (doubling from `SERVICE_ACME_RETRY_AFTER`, the
 * test's stand-in for part 16's minute), and "Retry certificate" starts an attempt at once once the cause is fixed.
 */
describe("the server binary when Pebble refuses a certificate", () => {
  const zone = `refuse${Date.now().toString(36)}.test`
  const blocked = `blocked.${zone}`
  const unreachable = `www.${zone}`
  let dir: string
  let pebble: Pebble
  let server: ServerProcess
  let base: string
  let tlsPort: number
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hostplane-acme-refusal-"))
    const edgePort = await freePort()
    const dnsPort = await freePort()
    tlsPort = await freePort()
    const wildcard = testAuthority().issue(["*.apps.localhost"])
    writeFileSync(join(dir, "edge.pem"), wildcard.chain)
    writeFileSync(join(dir, "edge.key"), wildcard.key, { mode: 0o600 })
    pebble = await startPebble({ dir, dnsServer: `127.0.0.1:${dnsPort}`, httpPort: edgePort, blocked: [blocked] })
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      SERVICE_DATA_DIR: join(dir, "data"),
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_EDGE_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
      SERVICE_TLS_CERT_FILE: join(dir, "edge.pem"),
      SERVICE_TLS_KEY_FILE: join(dir, "edge.key"),
      SERVICE_DNS_LISTEN: `127.0.0.1:${dnsPort}`,
      SERVICE_FALLBACK_ORIGIN: `edge.${zone}`,
      SERVICE_ACME_DIRECTORY: pebble.directory,
      SERVICE_ACME_EMAIL: "ops@example.org",
      SERVICE_ACME_CA_FILE: pebble.caFile,
      SERVICE_ACME_RETRY_AFTER: `${first} millis`,
      SERVICE_WORKERS: "off",
      DATABASE_URL: ""
    })
  }, 240_000)
  afterAll(async () => {
    server?.child.kill("SIGKILL")
    pebble?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("shows the CA's problem detail, backs off, and retries at once on request", async () => {
    const { call } = await signIn(base, "refusal-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "shop" })).status).toBe(201)
    expect((await call("POST", `/v1/orgs/${slug}/dns/zones`, { name: zone })).status).toBe(200)
    // The names resolve to an address where nothing listens: Pebble's validation cannot connect.
    const rrset = `/v1/orgs/${slug}/dns/zones/${zone}/rrsets/edge/A`
    expect((await call("PUT", rrset, { records: ["127.0.0.2"] })).status).toBe(200)
    const path = `/v1/orgs/${slug}/projects/shop/hostnames`
    const hostname = async (name: string) =>
      (await call("GET", path)).body.items.find((item: { name: string }) => item.name === name)
    for (const name of [blocked, unreachable]) {
      expect((await call("POST", path, { name })).status).toBe(200)
      await until(`${name} active`, async () => {
        await call("POST", `${path}/${name}/verify`)
        return (await hostname(name)).status === "active"
      })
    }
    const failed = async (name: string) => {
      let tls: any
      await until(`${name} failed`, async () => {
        tls = (await hostname(name)).tls
        return tls.status === "failed" || tls.status === "issued"
      })
      return tls
    }

    // Pebble's policy refuses the name when the order is placed; its problem detail is the lastError.
    const refused = await failed(blocked)
    expect(Object.keys(refused).sort()).toEqual(["expiresAt", "lastError", "status"])
    expect(refused).toMatchObject({ status: "failed", expiresAt: null })
    expect(refused.lastError).toMatch(/forbidden by policy/)
    expect(refused.lastError).toContain(blocked)
    // The validation could not connect: the challenge's problem detail, not the whole authorization.
    const invalid = await failed(unreachable)
    expect(invalid).toMatchObject({ status: "failed", expiresAt: null })
    expect(invalid.lastError).toMatch(/connect|refused/i)
    expect(invalid.lastError).not.toContain("{")

    // Attempts back off: each wait at least double the last, from the first; never a loop of orders.
    await until(
      "three refusals of the blocked name",
      () => logged(server.output(), "certificate attempt failed", blocked).length >= 3
    )
    const attempts = logged(server.output(), "certificate attempt failed", blocked)
    expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(first)
    expect(attempts[2]! - attempts[1]!).toBeGreaterThanOrEqual(2 * first)

    // The cause fixed, "Retry certificate" starts the next attempt at once instead of after the backoff.
    await until(
      "three failures of the unreachable name",
      () => logged(server.output(), "certificate attempt failed", unreachable).length >= 3
    )
    expect((await call("PUT", rrset, { records: ["127.0.0.1"] })).status).toBe(200)
    const failures = logged(server.output(), "certificate attempt failed", unreachable)
    const retried = await call("POST", `${path}/${unreachable}/tls/retry`)
    expect(retried.status).toBe(200)
    expect(retried.body.name).toBe(unreachable)
    expect(["pending", "issued"]).toContain(retried.body.tls.status)
    let issued: any
    await until(`${unreachable} issued`, async () => {
      issued = (await hostname(unreachable)).tls
      return issued.status === "issued"
    })
    expect(issued.lastError).toBeNull()
    const [done] = logged(server.output(), "certificate issued", unreachable)
    // The backoff alone would have waited 4x the first wait after the third failure.
    expect(done! - failures[failures.length - 1]!).toBeLessThan(4 * first)
    // A retry of a name that is not failed changes nothing.
    const again = await call("POST", `${path}/${unreachable}/tls/retry`)
    expect(again.status).toBe(200)
    expect(again.body.tls).toEqual(issued)

    // One order per attempt of the unreachable name; the blocked name's were refused before any was placed.
    expect(pebble.orders()).toBe(logged(server.output(), "certificate attempt failed", unreachable).length + 1)

    const root = await pebble.root()
    const served = () =>
      new Promise<string>((resolve, reject) => {
        const request = Https.request(
          { host: "127.0.0.1", port: tlsPort, servername: unreachable, headers: { host: unreachable }, ca: root },
          (response) => {
            resolve((response.socket as TLSSocket).getPeerCertificate().subjectaltname ?? "")
            response.resume()
          }
        )
        request.on("error", reject)
        request.end()
      })
    let names: string | undefined
    await until(`${unreachable} served`, async () => {
      names = await served().catch(() => undefined)
      return names !== undefined
    })
    expect(names).toBe(`DNS:${unreachable}`)
    expect(server.output()).not.toContain("PRIVATE KEY")
  }, 600_000)
})
