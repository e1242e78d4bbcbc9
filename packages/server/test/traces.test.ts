import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

interface ReceivedSpan {
  readonly name: string
  readonly kind: number
  readonly attributes: Record<string, unknown>
  readonly service: unknown
}

const attributeValue = (value: Record<string, unknown>): unknown =>
  value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue

/** A loopback OTLP/HTTP collector: keeps every span posted to /v1/traces (JSON), answers the other signals 200. */
const startCollector = async () => {
  const spans: Array<ReceivedSpan> = []
  const paths = new Set<string>()
  const server: Server = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      paths.add(request.url ?? "")
      if (request.url === "/v1/traces") {
        const parsed = JSON.parse(body)
        for (const resource of parsed.resourceSpans ?? []) {
          const service = attributeValue(
            (resource.resource?.attributes ?? []).find((a: { key: string }) => a.key === "service.name")?.value ?? {}
          )
          for (const scope of resource.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                name: span.name,
                kind: span.kind,
                service,
                attributes: Object.fromEntries(
                  (span.attributes ?? []).map((a: { key: string; value: Record<string, unknown> }) => [
                    a.key,
                    attributeValue(a.value)
                  ])
                )
              })
            }
          }
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${port}`, spans, paths, close: () => new Promise((r) => server.close(r)) }
}

describe("traces over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (the server as npm start runs it)", () => {
  let directory: string
  let collector: Awaited<ReturnType<typeof startCollector>>
  let server: Awaited<ReturnType<typeof startOnData>>
  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), "hostplane-traces-"))
    chmodSync(directory, 0o755)
    collector = await startCollector()
    server = await startOnData(join(directory, "data"), {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: "hostplane-traces-test",
      // Sent within moments instead of Effect's 5 s (spans) and 10 s (metrics) the test would wait out.
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_METRIC_EXPORT_INTERVAL: "500",
      SERVICE_WORKERS: "off"
    })
  }, 240_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGTERM")
    await collector?.close()
    rmSync(directory, { recursive: true, force: true })
  })

  it("exports one server span per request, named by its route, carrying the request id", async () => {
    const { call, headers } = await signIn(server.base, "traced")
    expect((await call("POST", "/v1/orgs", { name: "Traced", slug: "traced-org" })).status).toBe(201)
    const reply = await fetch(`${server.base}/v1/orgs/traced-org/members`, {
      headers: { ...headers, "x-request-id": "trace-test-0001" }
    })
    expect(reply.status).toBe(200)
    expect(reply.headers.get("x-request-id")).toBe("trace-test-0001")
    const generated = await fetch(`${server.base}/v1/orgs`, { headers })
    const generatedId = generated.headers.get("x-request-id")!
    // A warm GET /v1/me keeps its span too: with a tracer installed, no request is answered in front of the app.
    for (const id of ["trace-test-me-01", "trace-test-me-02"]) {
      expect((await fetch(`${server.base}/v1/me`, { headers: { ...headers, "x-request-id": id } })).status).toBe(200)
    }

    const find = (id: string) => collector.spans.find((span) => span.attributes["http.request_id"] === id)
    for (
      let i = 0;
      i < 120 &&
      (find("trace-test-0001") === undefined ||
        find(generatedId) === undefined ||
        find("trace-test-me-02") === undefined);
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    const members = find("trace-test-0001")
    expect(members).toMatchObject({
      name: "GET /v1/orgs/:orgSlug/members",
      service: "hostplane-traces-test",
      attributes: { "http.request.method": "GET", "http.response.status_code": 200 }
    })
    // SERVER kind (2 in OTLP's enum): what a tracing backend lists as the request.
    expect(members!.kind).toBe(2)
    expect(find(generatedId)?.name).toBe("GET /v1/orgs")
    expect(find("trace-test-me-02")?.name).toBe("GET /v1/me")
    // One server span per request: the request id names exactly one.
    expect(collector.spans.filter((span) => span.attributes["http.request_id"] === "trace-test-0001")).toHaveLength(1)
    // The raw path never names a span.
    expect(collector.spans.some((span) => span.name.includes("traced-org"))).toBe(false)
    // Metrics and logs take the same way.
    for (let i = 0; i < 120 && !(collector.paths.has("/v1/metrics") && collector.paths.has("/v1/logs")); i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect([...collector.paths].sort()).toEqual(["/v1/logs", "/v1/metrics", "/v1/traces"])
  }, 120_000)
})
