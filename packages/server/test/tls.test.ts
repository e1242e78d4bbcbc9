import { bundleOf, manifestEntry, testAuthority } from "@hostplane/testkit"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as Http from "node:http"
import { connect as h2connect } from "node:http2"
import * as Https from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer } from "./support/ServerProcess.ts"

/** A plain request to the edge with `host` as the Host header: status, headers and body. */
const plain = (port: number, host: string, path: string) =>
  new Promise<{ status: number; location: string | undefined; body: string }>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, location: response.headers.location, body }))
    })
    request.on("error", reject)
    request.end()
  })

/** An HTTPS request over HTTP/1.1 naming `host` by SNI and Host, trusting `ca` only. */
const secure = (port: number, host: string, path: string, ca: string) =>
  new Promise<{ status: number; body: string; names: string }>((resolve, reject) => {
    const request = Https.request(
      { host: "127.0.0.1", port, path, servername: host, headers: { host }, ca, agent: false },
      (response) => {
        const names = (response.socket as import("node:tls").TLSSocket).getPeerCertificate().subjectaltname ?? ""
        let body = ""
        response.on("data", (chunk) => (body += chunk))
        response.on("end", () => resolve({ status: response.statusCode!, body, names }))
      }
    )
    request.on("error", reject)
    request.end()
  })

/** The standalone binary with its edge on TLS and a static certificate for the app domain's names. */
describe("the server binary's edge over HTTPS with a static certificate", () => {
  const ca = testAuthority()
  const wildcard = ca.issue(["*.apps.localhost", "apps.localhost"])
  let server: ServerProcess
  let base: string
  let edgePort: number
  let tlsPort: number
  let dataDir: string
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-tls-"))
    writeFileSync(join(dataDir, "edge.pem"), wildcard.chain)
    writeFileSync(join(dataDir, "edge.key"), wildcard.key, { mode: 0o600 })
    const port = await freePort()
    edgePort = await freePort()
    tlsPort = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      SERVICE_DATA_DIR: join(dataDir, "data"),
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_EDGE_TLS_LISTEN: `127.0.0.1:${tlsPort}`,
      SERVICE_TLS_CERT_FILE: join(dataDir, "edge.pem"),
      SERVICE_TLS_KEY_FILE: join(dataDir, "edge.key"),
      SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
      DATABASE_URL: "",
      // The runtime's shard folders under /tmp, as on a machine where the run's temp is not on /dev/shm: the
      // sandbox's private /tmp must not hide them from workerd.
      TMPDIR: "/tmp"
    })
  }, 180_000)
  afterAll(async () => {
    server?.child.kill("SIGKILL")
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("redirects a covered name's plain request 308 to https on the TLS port, keeping path and query", async () => {
    const { call } = await signIn(base, "tls-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "shop" })).status).toBe(201)
    const moved = await plain(edgePort, "shop.apps.localhost", "/docs/a?b=1")
    expect(moved.status).toBe(308)
    expect(moved.location).toBe(`https://shop.apps.localhost:${tlsPort}/docs/a?b=1`)
    // The challenge path stays on plain HTTP: a CA validating a name must reach it there.
    const challenge = await plain(edgePort, "shop.apps.localhost", "/.well-known/acme-challenge/abc")
    expect(challenge.status).toBe(404)
    // A name no certificate covers is served on plain HTTP as before.
    const other = await plain(edgePort, "shop.example.net", "/")
    expect(other.status).toBe(404)
    expect(JSON.parse(other.body).code).toBe("unknown_hostname")
  })

  it("serves the edge over HTTPS (HTTP/1.1 and HTTP/2) with the static certificate", async () => {
    const answer = await secure(tlsPort, "shop.apps.localhost", "/", ca.root)
    expect(answer.names).toContain("DNS:*.apps.localhost")
    expect(answer.status).toBe(404)
    expect(JSON.parse(answer.body).code).toBe("not_found")
    const session = h2connect(`https://127.0.0.1:${tlsPort}`, { ca: ca.root, servername: "shop.apps.localhost" })
    const status = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ":path": "/", ":authority": "shop.apps.localhost" })
      stream.on("response", (headers) => resolve(Number(headers[":status"])))
      stream.on("error", reject)
      stream.resume()
    })
    session.close()
    expect(status).toBe(404)
  })

  it("a worker behind TLS sees the https URL the client asked for, over HTTP/1.1 and over HTTP/2 (:authority)", async () => {
    const { call, token } = await signIn(base, "tls-worker")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "echo" })).status).toBe(201)
    const deployed = await fetch(`${base}/v1/orgs/${slug}/projects/echo/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "echo" }),
          {
            name: "worker/index.js",
            content:
              "export default { fetch(request) { return Response.json({ url: request.url, host: request.headers.get('host'), proto: request.headers.get('x-forwarded-proto') }) } }"
          }
        ])
      )
    })
    expect(deployed.status).toBe(201)
    const host = "echo.apps.localhost"
    const expected = { url: `https://${host}:${tlsPort}/api/x?y=1`, host: `${host}:${tlsPort}`, proto: "https" }
    const overHttp1 = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = Https.request(
        {
          host: "127.0.0.1",
          port: tlsPort,
          path: "/api/x?y=1",
          servername: host,
          headers: { host: `${host}:${tlsPort}` },
          ca: ca.root,
          agent: false
        },
        (response) => {
          let body = ""
          response.on("data", (chunk) => (body += chunk))
          response.on("end", () => resolve({ status: response.statusCode!, body }))
        }
      )
      request.on("error", reject)
      request.end()
    })
    expect(overHttp1.status).toBe(200)
    expect(JSON.parse(overHttp1.body)).toEqual(expected)
    const session = h2connect(`https://127.0.0.1:${tlsPort}`, { ca: ca.root, servername: host })
    const overHttp2 = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const stream = session.request({ ":path": "/api/x?y=1", ":authority": `${host}:${tlsPort}` })
      let status = 0
      let body = ""
      stream.on("response", (headers) => (status = Number(headers[":status"])))
      stream.on("data", (chunk) => (body += chunk))
      stream.on("end", () => resolve({ status, body }))
      stream.on("error", reject)
    })
    session.close()
    expect(overHttp2.status).toBe(200)
    expect(JSON.parse(overHttp2.body)).toEqual(expected)
  }, 60_000)

  it("a static asset over HTTP/2 and HTTP/1.1 behind TLS: the same bytes and headers each time, 304 and HEAD", async () => {
    const { call, token } = await signIn(base, "tls-assets")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "shelf" })).status).toBe(201)
    const deployed = await fetch(`${base}/v1/orgs/${slug}/projects/shelf/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([manifestEntry({ name: "shelf" }), { name: "assets/app.css", content: "body { color: teal }" }])
      )
    })
    expect(deployed.status).toBe(201)
    const host = "shelf.apps.localhost"
    const session = h2connect(`https://127.0.0.1:${tlsPort}`, { ca: ca.root, servername: host })
    const overHttp2 = (method: string, headers: Record<string, string> = {}) =>
      new Promise<{ headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const stream = session.request({ ":method": method, ":path": "/app.css", ":authority": host, ...headers })
        let answer: Record<string, unknown> = {}
        let body = ""
        stream.on("response", (received) => (answer = { ...received }))
        stream.on("data", (chunk) => (body += chunk))
        stream.on("end", () => resolve({ headers: answer, body }))
        stream.on("error", reject)
      })
    try {
      const first = await overHttp2("GET")
      expect(first.headers[":status"]).toBe(200)
      expect(first.body).toBe("body { color: teal }")
      expect(first.headers["content-type"]).toBe("text/css; charset=utf-8")
      expect(first.headers["content-length"]).toBe(String(first.body.length))
      expect(first.headers["x-content-type-options"]).toBe("nosniff")
      const { date: _date, ...firstHeaders } = first.headers
      for (let i = 0; i < 3; i++) {
        const again = await overHttp2("GET")
        const { date: _again, ...againHeaders } = again.headers
        expect(again.body).toBe(first.body)
        expect(againHeaders).toEqual(firstHeaders)
      }
      const revalidated = await overHttp2("GET", { "if-none-match": first.headers["etag"] as string })
      expect(revalidated.headers[":status"]).toBe(304)
      expect(revalidated.body).toBe("")
      const head = await overHttp2("HEAD")
      expect(head.headers[":status"]).toBe(200)
      expect(head.headers["content-length"]).toBe(String(first.body.length))
      expect(head.body).toBe("")
    } finally {
      session.close()
    }
    const overHttp1 = await secure(tlsPort, host, "/app.css", ca.root)
    expect(overHttp1.status).toBe(200)
    expect(overHttp1.body).toBe("body { color: teal }")
  }, 60_000)

  it("logs the listener and never a private key", () => {
    expect(server.output()).toContain(`edge HTTPS on 127.0.0.1:${tlsPort}`)
    expect(server.output()).not.toContain("PRIVATE KEY")
  })
})
