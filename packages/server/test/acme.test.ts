import { testAuthority } from "@hostplane/testkit"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as Http from "node:http"
import * as Https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TLSSocket } from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer } from "./support/ServerProcess.ts"

/** GET over HTTPS to 127.0.0.1:port naming `host` by SNI and Host, trusting `ca` only. */
const secureGet = (port: number, host: string, path: string, ca: string) =>
  new Promise<{ status: number; names: string; body: string }>((resolve, reject) => {
    const request = Https.request(
      { host: "127.0.0.1", port, path, servername: host, headers: { host }, ca, agent: false },
      (response) => {
        const names = (response.socket as TLSSocket).getPeerCertificate().subjectaltname ?? ""
        let body = ""
        response.on("data", (chunk) => (body += chunk))
        response.on("end", () => resolve({ status: response.statusCode!, names, body }))
      }
    )
    request.on("error", reject)
    request.end()
  })

const plainGet = (port: number, host: string, path: string) =>
  new Promise<{ status: number; location: string | undefined }>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      response.resume()
      response.on("end", () => resolve({ status: response.statusCode!, location: response.headers.location }))
    })
    request.on("error", reject)
    request.end()
  })

/**
 * End to end with Pebble (Let's Encrypt's ACME test server) as the CA, resolving names through the server's own
 * authoritative DNS: a custom hostname in the org's zone is verified, issued by ACME over HTTP-01 answered by the
 * edge, and served over HTTPS with a chain a real TLS client checks against Pebble's root.
 */
describe("the server binary gets a certificate from Pebble for a verified custom hostname", () => {
  const ca = testAuthority()
  const zone = `tls${Date.now().toString(36)}.test`
  let dir: string
  let pebble: ChildProcess
  let pebbleOutput = ""
  let server: ServerProcess
  let base: string
  let edgePort: number
  let tlsPort: number
  let managementPort: number
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hostplane-acme-"))
    const pebbleCert = ca.issue(["localhost", "127.0.0.1"])
    writeFileSync(join(dir, "pebble.pem"), pebbleCert.chain)
    writeFileSync(join(dir, "pebble.key"), pebbleCert.key)
    writeFileSync(join(dir, "ca.pem"), ca.root)
    const acmePort = await freePort()
    managementPort = await freePort()
    edgePort = await freePort()
    tlsPort = await freePort()
    const dnsPort = await freePort()
    writeFileSync(
      join(dir, "pebble.json"),
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${acmePort}`,
          managementListenAddress: `127.0.0.1:${managementPort}`,
          certificate: join(dir, "pebble.pem"),
          privateKey: join(dir, "pebble.key"),
          // HTTP-01 validation connects to the edge's plain listener.
          httpPort: edgePort,
          tlsPort: await freePort(),
          ocspResponderURL: "",
          externalAccountBindingRequired: false
        }
      })
    )
    pebble = spawn("pebble", ["-config", join(dir, "pebble.json"), "-dnsserver", `127.0.0.1:${dnsPort}`], {
      env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", PEBBLE_AUTHZREUSE: "0" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    pebble.stdout!.on("data", (chunk) => (pebbleOutput += chunk))
    pebble.stderr!.on("data", (chunk) => (pebbleOutput += chunk))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      SERVICE_DATA_DIR: join(dir, "data"),
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_EDGE_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
      SERVICE_DNS_LISTEN: `127.0.0.1:${dnsPort}`,
      // A custom name in the org's zone gets a CNAME to the fallback origin, which the zone itself resolves.
      SERVICE_FALLBACK_ORIGIN: `edge.${zone}`,
      SERVICE_ACME_DIRECTORY: `https://127.0.0.1:${acmePort}/dir`,
      SERVICE_ACME_EMAIL: "ops@example.org",
      SERVICE_ACME_CA_FILE: join(dir, "ca.pem"),
      SERVICE_WORKERS: "off",
      DATABASE_URL: ""
    })
  }, 180_000)
  afterAll(async () => {
    server?.child.kill("SIGKILL")
    pebble?.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })

  it("verifies, issues, redirects and serves the name over HTTPS with Pebble's chain", async () => {
    const { call } = await signIn(base, "acme-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "shop" })).status).toBe(201)
    expect((await call("POST", `/v1/orgs/${slug}/dns/zones`, { name: zone })).status).toBe(200)
    const record = await call("PUT", `/v1/orgs/${slug}/dns/zones/${zone}/rrsets/edge/A`, { records: ["127.0.0.1"] })
    expect(record.status).toBe(200)
    const name = `www.${zone}`
    expect((await call("POST", `/v1/orgs/${slug}/projects/shop/hostnames`, { name })).status).toBe(200)
    const path = `/v1/orgs/${slug}/projects/shop/hostnames`
    let hostname: any
    for (let i = 0; i < 240; i++) {
      await call("POST", `${path}/${name}/verify`)
      hostname = (await call("GET", path)).body.items.find((item: { name: string }) => item.name === name)
      if (hostname.tls.status === "issued" || hostname.tls.status === "failed") break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect({
      status: hostname.status,
      tls: hostname.tls.status,
      error: hostname.tls.lastError,
      pebble: pebbleOutput.slice(-2000)
    }).toMatchObject({
      status: "active",
      tls: "issued",
      error: null
    })
    expect(Date.parse(hostname.tls.expiresAt)).toBeGreaterThan(Date.now())
    // Pebble makes a new root at every start: the client trusts exactly that one.
    const root = await new Promise<string>((resolve, reject) =>
      Https.get(`https://127.0.0.1:${managementPort}/roots/0`, { ca: ca.root }, (response) => {
        let body = ""
        response.on("data", (chunk) => (body += chunk))
        response.on("end", () => resolve(body))
      }).on("error", reject)
    )
    let served: Awaited<ReturnType<typeof secureGet>> | undefined
    for (let i = 0; i < 40 && served === undefined; i++) {
      served = await secureGet(tlsPort, name, "/", root).catch(() => undefined)
      if (served === undefined) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(served?.names).toBe(`DNS:${name}`)
    expect(served?.status).toBe(404)
    expect(await plainGet(edgePort, name, "/a?b=1")).toEqual({
      status: 308,
      location: `https://${name}:${tlsPort}/a?b=1`
    })
    expect(server.output()).not.toContain("PRIVATE KEY")
    expect(server.output()).toContain("certificate issued")
  }, 150_000)
})
