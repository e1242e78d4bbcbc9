import { spawnSync } from "node:child_process"
import * as Dgram from "node:dgram"
import * as Http from "node:http"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

/** One DNS query for `name` (type A) over UDP; resolves when any answer arrives. */
const dnsQuery = (port: number, name: string) =>
  new Promise<void>((resolve, reject) => {
    const socket = Dgram.createSocket("udp4")
    const labels = name.split(".").map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]))
    const header = Buffer.from([0x12, 0x34, 0x00, 0x00, 0, 1, 0, 0, 0, 0, 0, 0])
    const message = Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])])
    const timer = setTimeout(() => (socket.close(), reject(new Error("no DNS answer"))), 10_000)
    socket.once("message", () => (clearTimeout(timer), socket.close(), resolve()))
    socket.send(message, port, "127.0.0.1")
  })

/** The value of the series `name{labels}` in a Prometheus text body (labels in the order the body writes them). */
const series = (body: string, line: string) =>
  body
    .split("\n")
    .filter((candidate) => candidate.startsWith(`${line} `))
    .map((candidate) => Number(candidate.slice(line.length + 1)))[0]

describe("metrics on SERVICE_METRICS_LISTEN (the server as npm start runs it)", () => {
  let directory: string
  let server: Awaited<ReturnType<typeof startOnData>>
  let metricsUrl: string
  let edgePort: number
  let dnsPort: number
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-metrics-"))
    chmodSync(directory, 0o755)
    const metricsPort = await freePort()
    edgePort = await freePort()
    dnsPort = await freePort()
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`
    server = await startOnData(join(directory, "data"), {
      SERVICE_METRICS_LISTEN: `127.0.0.1:${metricsPort}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_DNS_LISTEN: `127.0.0.1:${dnsPort}`,
      SERVICE_WORKERS: "off",
      // Not the default: the listeners' announced idle timeout shows the setting is read (operations.test.ts sees 65).
      SERVICE_KEEPALIVE_TIMEOUT: "70 seconds"
    })
  }, 240_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGTERM")
    rmSync(directory, { recursive: true, force: true })
  })

  it("counts API requests by route template, method and status, with durations, and passes promtool", async () => {
    const { call } = await signIn(server.base, "metrics")
    const created = await call("POST", "/v1/orgs", { name: "Metered", slug: "metered-org" })
    expect(created.status).toBe(201)
    for (let i = 0; i < 3; i++) expect((await call("GET", "/v1/orgs/metered-org/members")).status).toBe(200)
    expect((await call("GET", "/v1/orgs/no-such-org/members")).status).toBe(404)
    expect((await fetch(`${server.base}/v1/me`)).status).toBe(401)
    // A warm GET /v1/me is answered in front of the router (MeLane.ts) and counted all the same.
    for (let i = 0; i < 4; i++) expect((await call("GET", "/v1/me")).status).toBe(200)
    expect((await fetch(`${server.base}/nowhere/at/all`)).status).toBe(404)
    // The edge counts by outcome; the name server by rcode (a name in no zone of its is REFUSED).
    expect((await fetch(`http://127.0.0.1:${edgePort}/`, { headers: { host: "unknown.example" } })).status).toBe(404)
    await dnsQuery(dnsPort, "not-served.example")

    const scraped = await fetch(metricsUrl)
    expect(scraped.status).toBe(200)
    expect(scraped.headers.get("content-type")).toContain("text/plain")
    const body = await scraped.text()

    const route = (template: string, method: string, status: number) =>
      `hostplane_http_requests_total{route="${template}",method="${method}",status="${status}"}`
    expect(series(body, route("/v1/orgs/:orgSlug/members", "GET", 200))).toBe(3)
    expect(series(body, route("/v1/orgs/:orgSlug/members", "GET", 404))).toBe(1)
    expect(series(body, route("/v1/orgs", "POST", 201))).toBe(1)
    expect(series(body, route("/v1/me", "GET", 401))).toBeGreaterThanOrEqual(1)
    expect(series(body, route("/v1/me", "GET", 200))).toBe(4)
    // A path outside the API is "other", never its raw text; no raw id or slug becomes a label.
    expect(series(body, route("other", "GET", 404))).toBeGreaterThanOrEqual(1)
    expect(body).not.toContain("metered-org")
    expect(body).not.toContain("no-such-org")
    expect(body).not.toContain("nowhere")
    expect(
      series(body, 'hostplane_http_request_duration_seconds_count{route="/v1/orgs/:orgSlug/members",method="GET"}')
    ).toBe(4)
    expect(body).toContain(
      'hostplane_http_request_duration_seconds_bucket{route="/v1/orgs/:orgSlug/members",method="GET",le="+Inf"} 4'
    )

    expect(series(body, 'hostplane_edge_requests_total{outcome="not_found"}')).toBeGreaterThanOrEqual(1)
    expect(series(body, 'hostplane_dns_queries_total{rcode="REFUSED"}')).toBeGreaterThanOrEqual(1)
    expect(series(body, "hostplane_database_up")).toBe(1)
    expect(series(body, 'hostplane_database_connections{state="active"}')).toBeGreaterThanOrEqual(1)
    expect(series(body, "hostplane_database_connections_max")).toBeGreaterThan(0)
    expect(series(body, "process_resident_memory_bytes")).toBeGreaterThan(0)
    // The periodic jobs (singleton kinds) run from the start: at least one claim ended by now or soon after.
    let jobs = body
    for (let i = 0; i < 60 && !/^hostplane_jobs_total\{kind="[a-z_]+",outcome="[a-z_]+"\} \d+$/m.test(jobs); i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      jobs = await (await fetch(metricsUrl)).text()
    }
    expect(jobs).toMatch(/^hostplane_jobs_total\{kind="[a-z_]+",outcome="[a-z_]+"\} \d+$/m)

    const check = spawnSync("promtool", ["check", "metrics"], { input: jobs, encoding: "utf8" })
    expect({ status: check.status, output: check.stdout + check.stderr }).toEqual({ status: 0, output: "" })
  }, 120_000)

  it("serves metrics only on its own listener, not on the API's", async () => {
    expect((await fetch(`${server.base}/metrics`)).status).toBe(404)
  })

  it("keeps idle connections for SERVICE_KEEPALIVE_TIMEOUT on the API and the edge, and says so", async () => {
    const announced = (url: string) =>
      new Promise<string | undefined>((resolve, reject) => {
        const agent = new Http.Agent({ keepAlive: true })
        const request = Http.get(url, { agent, headers: { host: "nobody.example.test" } }, (response) => {
          response.resume()
          response.on("end", () => (agent.destroy(), resolve(response.headers["keep-alive"]?.toString())))
        })
        request.on("error", reject)
      })
    expect(await announced(`${server.base}/livez`)).toBe("timeout=70")
    expect(await announced(`http://127.0.0.1:${edgePort}/`)).toBe("timeout=70")
  })
})
