import { NodeHttpServer } from "@effect/platform-node"
import { CertificateBook, readStaticCertificate } from "@hostplane/adapters-providers/tls/CertificateBook"
import { edgeTlsServer } from "@hostplane/adapters-providers/tls/EdgeTlsServer"
import { Tls } from "@hostplane/core"
import { edgeAppOver } from "@hostplane/http"
import { Config, Effect, Layer, Option } from "effect"
import { HttpServer } from "effect/http"
import { createServer } from "node:http"
import { parseListen } from "./Listen.ts"

const optionalPath = (name: string) =>
  Config.option(Config.String(name)).pipe(Config.map((value) => Option.filter(value, (path) => path.trim() !== "")))

/**
 * The edge's listeners: plain HTTP on `SERVICE_EDGE_LISTEN`, and HTTPS on `SERVICE_EDGE_TLS_LISTEN` unless it is `off`
 * (the default), with the static certificate of `SERVICE_TLS_CERT_FILE` and `SERVICE_TLS_KEY_FILE` when both are set
 * (decisions.md part 16). Both serve the same edge app; each tells it how the request arrived.
 */
export const edgeListeners = (edgeListen: { readonly host: string; readonly port: number }) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const plain = HttpServer.serve(edgeAppOver("http")).pipe(
        Layer.provide(NodeHttpServer.layer(createServer, { host: edgeListen.host, port: edgeListen.port }))
      )
      const tlsSetting = (yield* Config.String("SERVICE_EDGE_TLS_LISTEN").pipe(Config.withDefault("off"))).trim()
      const certFile = yield* optionalPath("SERVICE_TLS_CERT_FILE")
      const keyFile = yield* optionalPath("SERVICE_TLS_KEY_FILE")
      if (Option.isSome(certFile) !== Option.isSome(keyFile)) {
        return yield* Effect.die(
          new Error("SERVICE_TLS_CERT_FILE and SERVICE_TLS_KEY_FILE are set together or not at all")
        )
      }
      if (tlsSetting.toLowerCase() === "off" || tlsSetting === "") return plain
      const tlsListen = parseListen(tlsSetting)
      const fallback =
        Option.isSome(certFile) && Option.isSome(keyFile)
          ? yield* Effect.try({
              try: () => readStaticCertificate(certFile.value, keyFile.value),
              catch: (error) => error as Error
            }).pipe(Effect.orDie)
          : undefined
      const book = new CertificateBook(fallback)
      const edgeTls = Layer.succeed(Tls.EdgeTls)({
        httpsPort: tlsListen.port,
        covers: (host) => book.covers(host),
        challenge: () => Effect.succeedNone
      })
      const secure = HttpServer.serve(edgeAppOver("https")).pipe(
        Layer.provide(NodeHttpServer.layer(() => edgeTlsServer(book), { host: tlsListen.host, port: tlsListen.port }))
      )
      const announce = Layer.effectDiscard(
        Effect.logInfo(
          `edge HTTPS on ${tlsListen.host}:${tlsListen.port}` +
            (fallback === undefined
              ? " (no static certificate)"
              : ` (static certificate for ${fallback.names.join(", ")})`)
        )
      )
      return Layer.mergeAll(plain, secure, announce).pipe(Layer.provide(edgeTls))
    })
  )
