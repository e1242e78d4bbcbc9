import { Config, Duration, Effect, Layer, References } from "effect"
import { FetchHttpClient } from "effect/http"
import { Otlp } from "effect/observability"

/** `OTEL_EXPORTER_OTLP_HEADERS`, the standard `key=value,key=value` list (values URL-encoded): a vendor's API key. */
const parseHeaders = (value: string): Record<string, string> =>
  Object.fromEntries(
    value
      .split(",")
      .map((pair) => pair.trim())
      .filter((pair) => pair.includes("="))
      .map((pair) => {
        const at = pair.indexOf("=")
        return [decodeURIComponent(pair.slice(0, at).trim()), decodeURIComponent(pair.slice(at + 1).trim())]
      })
  )

/**
 * Traces, metrics and logs over OTLP/HTTP (Effect's `Otlp` layer, JSON) when the standard `OTEL_EXPORTER_OTLP_ENDPOINT`
 * is set (decisions.md part 15), as service `OTEL_SERVICE_NAME` (default `hostplane`); its logs go beside the JSON
 * lines, not instead. Unset, no tracer is installed and spans are not even built: a span per statement and per
 * transaction, each the parent of the next step, was a measurable share of a write's cost with nothing to read them.
 */
export const telemetryLayer = Layer.unwrap(
  Effect.gen(function* () {
    const setting = (name: string) =>
      Effect.map(Config.option(Config.String(name)), (value) => (value._tag === "Some" ? value.value.trim() : ""))
    const endpoint = yield* setting("OTEL_EXPORTER_OTLP_ENDPOINT")
    if (endpoint === "") return Layer.succeed(References.TracerEnabled)(false)
    const serviceName = (yield* setting("OTEL_SERVICE_NAME")) || "hostplane"
    const headers = parseHeaders(yield* setting("OTEL_EXPORTER_OTLP_HEADERS"))
    // The standard export delays, in milliseconds; unset, Effect's own (spans 5 s, metrics 10 s, logs 1 s).
    const every = (name: string) =>
      Effect.map(Config.option(Config.Int(name)), (value) =>
        value._tag === "Some" && value.value > 0 ? Duration.millis(value.value) : undefined
      )
    const tracerExportInterval = yield* every("OTEL_BSP_SCHEDULE_DELAY")
    const metricsExportInterval = yield* every("OTEL_METRIC_EXPORT_INTERVAL")
    const loggerExportInterval = yield* every("OTEL_BLRP_SCHEDULE_DELAY")
    return Otlp.layerJson({
      baseUrl: endpoint,
      resource: { serviceName },
      headers,
      ...(tracerExportInterval === undefined ? {} : { tracerExportInterval }),
      ...(metricsExportInterval === undefined ? {} : { metricsExportInterval }),
      ...(loggerExportInterval === undefined ? {} : { loggerExportInterval })
    }).pipe(Layer.provide(FetchHttpClient.layer))
  })
)
