// Our own floor for bench/me.ts: Effect HttpApi with one endpoint, `GET /v1/me`, behind a bearer middleware that
// hashes the token with node:crypto (as hostplane's does), answering the same bytes (BENCH_BODY_FILE, decoded once
// and encoded through the same `Me` schema) on BENCH_LISTEN (host:port). No database, no log lines.
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Errors, Identity } from "@hostplane/core"
import { apiError } from "@hostplane/api/errors/ApiError"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { HttpRouter } from "effect/http"
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSecurity
} from "effect/http-api"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const listen = process.env.BENCH_LISTEN ?? ""
const colon = listen.lastIndexOf(":")
const host = listen.slice(0, colon)
const port = Number(listen.slice(colon + 1))
const me = Schema.decodeUnknownSync(Identity.Me)(JSON.parse(readFileSync(process.env.BENCH_BODY_FILE ?? "", "utf8")))

class Caller extends Context.Service<Caller, { readonly tokenHash: string }>()("bench/floor/Caller") {}

class Bearer extends HttpApiMiddleware.Service<Bearer, { provides: Caller; requires: never }>()("bench/floor/Bearer", {
  security: { bearer: HttpApiSecurity.bearer },
  error: apiError(Errors.Unauthorized)
}) {}

const Api = HttpApi.make("floor").add(
  HttpApiGroup.make("identity")
    .add(HttpApiEndpoint.get("me", "/me", { success: Identity.Me }).middleware(Bearer))
    .prefix("/v1")
)

const BearerLive = Layer.succeed(
  Bearer,
  Bearer.of({
    bearer: (httpEffect, { credential }) => {
      const token = Redacted.value(credential)
      if (token === "") return Effect.fail(new Errors.Unauthorized({ message: "sign in first" }))
      const tokenHash = createHash("sha256").update(token, "utf8").digest("hex")
      return Effect.provideService(httpEffect, Caller, { tokenHash })
    }
  })
)

const Handlers = HttpApiBuilder.group(Api, "identity", (handlers) =>
  Effect.succeed(handlers.handle("me", () => Effect.succeed(me)))
)

const ApiLive = HttpApiBuilder.layer(Api).pipe(Layer.provide(Handlers), Layer.provide(BearerLive))

HttpRouter.serve(ApiLive, { disableLogger: true }).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { host, port })),
  Layer.launch,
  NodeRuntime.runMain
)
