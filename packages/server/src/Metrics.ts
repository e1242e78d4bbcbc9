import { PgClient } from "@effect/sql-pg"
import { RequestMetrics } from "@hostplane/http"
import { Config, Duration, Effect, Layer, Metric } from "effect"
import { HttpMiddleware, HttpRouter, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { parseListen } from "./Listen.ts"
import { type ConnectionSettings, httpListener } from "./Listeners.ts"

/** `SERVICE_METRICS_LISTEN`: where `GET /metrics` answers; `off` (the default) serves none and records no route labels. */
export const metricsListenConfig = Config.String("SERVICE_METRICS_LISTEN").pipe(
  Config.withDefault("off"),
  Config.map((value) => value.trim()),
  Config.map((value) => (value === "" || value.toLowerCase() === "off" ? undefined : parseListen(value)))
)

const edgeRequests = Metric.counter("hostplane_edge_requests_total", {
  description:
    "Requests the edge answered, by outcome: served (2xx, 3xx), denied (401, 403: an access policy or a sign-in), " +
    "not_found (404: no such host or path), client_error (other 4xx), unavailable (502, 503, 504), error (other 5xx)",
  incremental: true
})

const outcomeOf = (status: number): string =>
  status < 400
    ? "served"
    : status === 401 || status === 403
      ? "denied"
      : status === 404
        ? "not_found"
        : status < 500
          ? "client_error"
          : status === 502 || status === 503 || status === 504
            ? "unavailable"
            : "error"

const edgeBy = new Map<string, Metric.Metric<number, unknown>>()

/** Counts `count` edge responses (one unless told) by their outcome, read from their status alone. */
export const countEdge = (status: number, count = 1) => {
  const outcome = outcomeOf(status)
  let metric = edgeBy.get(outcome)
  if (metric === undefined) edgeBy.set(outcome, (metric = Metric.withAttributes(edgeRequests, { outcome })))
  return Metric.update(metric, count)
}

/** Counts each edge response by its outcome: the edge's own code stays as it is. */
export const edgeOutcomes = HttpMiddleware.make((app) => Effect.tap(app, (response) => countEdge(response.status)))

const databaseUp = Metric.gauge("hostplane_database_up", {
  description: "1 when the control database answered this scrape's query within a second, else 0"
})
const poolConnections = Metric.gauge("hostplane_database_connections", {
  description:
    "Connections this process holds to the control database, by state (active: running a statement, this " +
    "scrape's own included; idle; idle_in_transaction)"
})
const poolMax = Metric.gauge("hostplane_database_connections_max", {
  description: "The most connections this process's pool opens to the control database"
})
const residentMemory = Metric.gauge("process_resident_memory_bytes", { description: "Resident memory size in bytes" })
const heapUsed = Metric.gauge("nodejs_heap_used_bytes", { description: "V8 heap in use, in bytes" })
const startTime = Metric.gauge("process_start_time_seconds", {
  description: "Start time of the process since the Unix epoch, in seconds"
})
const cpuSeconds = Metric.counter("process_cpu_seconds_total", {
  description: "User and system CPU time spent, in seconds"
})

const states = ["active", "idle", "idle in transaction"] as const

/**
 * The gauges read at scrape time: the pool's connections as PostgreSQL sees them (the pool keeps its count to itself;
 * each connection carries this process's `application_name`, `PgDatabase.applicationName`) and the process's own.
 */
const sample = (lastCpu: { micros: number }) =>
  Effect.gen(function* () {
    const client = yield* PgClient.PgClient
    yield* Metric.update(poolMax, (client.config as PgClient.PgPoolConfig).maxConnections ?? 10)
    const rows = yield* client<{ readonly state: string | null; readonly count: number }>`
      SELECT state, count(*)::int AS count FROM pg_stat_activity
      WHERE application_name = current_setting('application_name') GROUP BY state`.pipe(
      Effect.timeout(Duration.seconds(1)),
      Effect.option
    )
    yield* Metric.update(databaseUp, rows._tag === "Some" ? 1 : 0)
    if (rows._tag === "Some") {
      for (const state of states) {
        const count = rows.value.find((row) => row.state === state)?.count ?? 0
        yield* Metric.update(Metric.withAttributes(poolConnections, { state: state.replaceAll(" ", "_") }), count)
      }
    }
    const memory = process.memoryUsage()
    yield* Metric.update(residentMemory, memory.rss)
    yield* Metric.update(heapUsed, memory.heapUsed)
    yield* Metric.update(startTime, Math.floor(Date.now() / 1000 - process.uptime()))
    const cpu = process.cpuUsage()
    const micros = cpu.user + cpu.system
    yield* Metric.update(cpuSeconds, (micros - lastCpu.micros) / 1e6)
    lastCpu.micros = micros
  })

/**
 * `GET /metrics` on `SERVICE_METRICS_LISTEN` in the Prometheus text format (Effect's `PrometheusMetrics`, decisions.md
 * part 15), on a listener of its own so the API's port never exposes it; and, while it is on, the API's requests
 * labelled by route (`RequestMetrics`). Off: nothing is served and nothing more is recorded.
 */
export const metricsLayer = (connections: ConnectionSettings) =>
  Layer.unwrap(
    Effect.map(metricsListenConfig, (address) => {
      if (address === undefined) return Layer.empty
      const lastCpu = { micros: 0 }
      const scrape = Effect.gen(function* () {
        yield* sample(lastCpu)
        const body = yield* PrometheusMetrics.format()
        return HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4; charset=utf-8" })
      })
      return HttpRouter.serve(HttpRouter.add("GET", "/metrics", scrape), { disableLogger: true }).pipe(
        Layer.provide(httpListener({ name: "metrics", address, setting: "SERVICE_METRICS_LISTEN" }, connections))
      )
    })
  )

/** `RequestMetrics` on when metrics are served: provided to the API's routes. */
export const requestMetrics = Layer.unwrap(
  Effect.map(metricsListenConfig, (address) =>
    address === undefined ? Layer.empty : Layer.succeed(RequestMetrics)(true)
  )
)
