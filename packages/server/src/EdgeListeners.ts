import { NodeHttpServer } from "@effect/platform-node"
import * as AcmeClientNode from "@hostplane/adapters-providers/tls/AcmeClientNode"
import {
  CertificateBook,
  readStaticCertificate,
  servedCertificate,
  type StaticCertificate
} from "@hostplane/adapters-providers/tls/CertificateBook"
import { edgeTlsServer } from "@hostplane/adapters-providers/tls/EdgeTlsServer"
import { Secrets, Tls } from "@hostplane/core"
import { edgeAppOver, installLane, makeEdgeLane } from "@hostplane/node"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { HttpServer } from "effect/http"
import { parseListen } from "./Listen.ts"
import { countEdge, edgeOutcomes } from "./Metrics.ts"
import { type Address, type ConnectionSettings, httpListener, namedBind } from "./Listeners.ts"

const optionalPath = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map((value) => Option.filter(value, (path) => path.trim() !== "")))

/**
 * The edge's TLS settings (decisions.md part 16): the listener (`SERVICE_EDGE_TLS_LISTEN`, default `off`), the static
 * certificate (`SERVICE_TLS_CERT_FILE`, `SERVICE_TLS_KEY_FILE`), and whether ACME runs (`SERVICE_ACME_DIRECTORY`).
 * Certificates exist for the listener: with it off, neither the static one nor ACME is used.
 */
const edgeTlsSettings = Effect.gen(function* () {
  const setting = (yield* Config.String("SERVICE_EDGE_TLS_LISTEN").pipe(Config.withDefault("off"))).trim()
  const certFile = yield* optionalPath("SERVICE_TLS_CERT_FILE")
  const keyFile = yield* optionalPath("SERVICE_TLS_KEY_FILE")
  if (Option.isSome(certFile) !== Option.isSome(keyFile)) {
    return yield* Effect.die(new Error("SERVICE_TLS_CERT_FILE and SERVICE_TLS_KEY_FILE are set together or not at all"))
  }
  if (setting.toLowerCase() === "off" || setting === "") return undefined
  const listen = parseListen(setting)
  const fallback: StaticCertificate | undefined =
    Option.isSome(certFile) && Option.isSome(keyFile)
      ? yield* Effect.try({
          try: () => readStaticCertificate(certFile.value, keyFile.value),
          catch: (error) => error as Error
        }).pipe(Effect.orDie)
      : undefined
  const acme = Option.isSome(yield* AcmeClientNode.optionsConfig)
  // Testing only: the first wait after a failed attempt (decisions.md part 16 fixes it at 1 minute).
  const retryAfter = yield* Config.Duration("SERVICE_ACME_RETRY_AFTER").pipe(Config.withDefault(Duration.minutes(1)))
  return { listen, fallback, acme, retryAfter }
})

/** `TlsConfig` for the API and the jobs, and the ACME client (never called while ACME is off). */
export const tlsPorts = Layer.unwrap(
  Effect.map(edgeTlsSettings, (settings) =>
    Layer.merge(
      Tls.TlsConfig.make({
        acme: settings?.acme ?? false,
        staticCertificate:
          settings?.fallback === undefined
            ? undefined
            : { names: settings.fallback.names, expiresAt: settings.fallback.expiresAt },
        retryAfter: settings?.retryAfter ?? Duration.minutes(1)
      }),
      AcmeClientNode.layerConfig
    )
  )
)

/**
 * Keeps `book` equal to the store's served certificates: everything at start and after a lost feed, then each name
 * the feed announces (issued, renewed, removed with its hostname), so a certificate reaches the listener of every
 * replica without a restart. A key that does not open or match is logged by name and left out.
 */
const followCertificates = (book: CertificateBook) =>
  Effect.gen(function* () {
    const store = yield* Tls.CertificateStore
    const sealer = yield* Secrets.Sealer
    const load = Effect.fnUntraced(function* (row: Tls.ServedRow) {
      const key = yield* Effect.option(sealer.open(row.key, Tls.keyContext(row.name)))
      if (Option.isNone(key)) return yield* Effect.logError("certificate key does not open", { hostname: row.name })
      try {
        book.set(row.name, servedCertificate(row.chain, key.value))
      } catch (error) {
        yield* Effect.logError("certificate not served", { hostname: row.name, error: (error as Error).message })
      }
    })
    const reloadAll = Effect.gen(function* () {
      const rows = yield* store.served
      const names = new Set(rows.map((row) => row.name))
      for (const name of book.names()) if (!names.has(name)) book.delete(name)
      yield* Effect.forEach(rows, load, { discard: true })
    })
    const reload = Effect.fnUntraced(function* (name: string) {
      const row = yield* store.find(name)
      const served =
        Option.isSome(row) && row.value.chain !== null && row.value.key !== null && row.value.expiresAt !== null
          ? { name, chain: row.value.chain, key: row.value.key, expiresAt: row.value.expiresAt }
          : undefined
      if (served === undefined) book.delete(name)
      else yield* load(served)
    })
    yield* Effect.scoped(
      Effect.gen(function* () {
        const feed = yield* store.watch
        yield* reloadAll
        for (;;) {
          const names = yield* feed.next
          for (const name of new Set(names)) yield* reload(name)
        }
      })
    ).pipe(
      Effect.tapError((error) => Effect.logWarning(`certificate feed lost (${error.message}); reloading all`)),
      Effect.retry(Schedule.spaced("1 second"))
    )
  })

/**
 * The edge's listeners: plain HTTP on `SERVICE_EDGE_LISTEN`, and HTTPS on `SERVICE_EDGE_TLS_LISTEN` unless it is
 * `off`. Both serve the same edge app; each tells it how the request arrived.
 */
export const edgeListeners = (edgeListen: Address, connections: ConnectionSettings) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const settings = yield* edgeTlsSettings
      const book = settings === undefined ? undefined : new CertificateBook(settings.fallback)
      const store = yield* Tls.CertificateStore
      const edgeTls =
        settings === undefined || book === undefined
          ? Tls.EdgeTls.off
          : Layer.succeed(Tls.EdgeTls)({
              httpsPort: settings.listen.port,
              covers: (host) => book.covers(host),
              challenge: (token) => store.challenge(token)
            })
      // Worker requests skip Effect's HTTP server (EdgeLane.ts); everything else reaches the edge app.
      const laneOf = (scheme: "http" | "https") => makeEdgeLane(scheme, countEdge).pipe(Effect.provide(edgeTls))
      const plainLane = yield* laneOf("http")
      const plain = HttpServer.serve(edgeAppOver("http"), edgeOutcomes).pipe(
        Layer.provide(
          httpListener({ name: "edge", address: edgeListen, setting: "SERVICE_EDGE_LISTEN" }, connections, (server) =>
            installLane(server, plainLane)
          )
        )
      )
      if (settings === undefined || book === undefined) return plain.pipe(Layer.provide(edgeTls))
      const { listen, fallback } = settings
      const secureLane = yield* laneOf("https")
      const secure = HttpServer.serve(edgeAppOver("https"), edgeOutcomes).pipe(
        Layer.provide(
          namedBind(
            NodeHttpServer.layer(
              () => {
                const server = installLane(edgeTlsServer(book), secureLane)
                // HTTP/1.1 connections over TLS keep part 15's idle time too; HTTP/2 sessions close when the peer goes.
                ;(server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = Duration.toMillis(
                  connections.keepAlive
                )
                return server
              },
              { host: listen.host, port: listen.port, gracefulShutdownTimeout: connections.shutdown }
            ),
            { name: "edge HTTPS", address: listen, setting: "SERVICE_EDGE_TLS_LISTEN" }
          )
        )
      )
      const follow = Layer.effectDiscard(Effect.forkScoped(followCertificates(book)))
      const announce = Layer.effectDiscard(
        Effect.logInfo(
          `edge HTTPS on ${listen.host}:${listen.port}` +
            (fallback === undefined
              ? " (no static certificate)"
              : ` (static certificate for ${fallback.names.join(", ")})`) +
            (settings.acme ? ", ACME on" : "")
        )
      )
      return Layer.mergeAll(plain, secure, follow, announce).pipe(Layer.provide(edgeTls))
    })
  )
