import { Kernel, Tls } from "@hostplane/core"
import { Effect, Option } from "effect"
import { Headers, HttpServerRequest, HttpServerResponse } from "effect/http"
import { edgeApp } from "./EdgeApp.ts"
import { hostOf } from "./EdgeLane.ts"

const plainText = (status: number, body: string) =>
  HttpServerResponse.text(body, { status, headers: { "cache-control": "no-store" } })

/**
 * The edge app as one listener serves it: `scheme` is how the request reached the edge, which no client header can
 * change. The request the app (and the worker behind it) sees carries it as `protocol`, so `toURL` gives an
 * `https://` URL behind TLS, and as an `X-Forwarded-Proto` set here, replacing any the client sent.
 *
 * On the plain listener, with a TLS listener running (an `EdgeTls` that is not `EdgeTls.off`): HTTP-01 challenges are answered, and a
 * request for a name whose certificate is in hand is redirected 308 to the same URL on https.
 */
export const edgeAppOver = (scheme: "http" | "https") =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const seen = request.modify({
      protocol: scheme,
      headers: Headers.set(request.headers, "x-forwarded-proto", scheme)
    })
    const tls = Kernel.portOn(yield* Tls.EdgeTls)
    const path = request.url.split("?")[0] ?? "/"
    if (scheme === "http" && path.startsWith(Tls.challengePrefix) && Option.isSome(tls)) {
      const token = path.slice(Tls.challengePrefix.length)
      const answer = Tls.isChallengeToken(token) ? yield* tls.value.challenge(token) : Option.none()
      if (Option.isSome(answer)) return plainText(200, answer.value)
      return plainText(404, "no such challenge")
    }
    if (scheme === "http" && Option.isSome(tls)) {
      const host = hostOf(request.headers["host"])
      if (Kernel.isHostName(host) && tls.value.covers(host)) {
        const port = tls.value.httpsPort === 443 ? "" : `:${tls.value.httpsPort}`
        const target = request.url.startsWith("/") ? request.url : `/${request.url}`
        return HttpServerResponse.redirect(`https://${host}${port}${target}`, { status: 308 })
      }
    }
    return yield* Effect.provideService(edgeApp, HttpServerRequest.HttpServerRequest, seen)
  })
