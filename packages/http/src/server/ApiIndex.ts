import { Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"

/** `GET /v1`: what this API is and where its description lives, so the base URL itself answers. */
export const apiIndex = Layer.unwrap(
  Effect.map(Effect.service(Kernel.Settings), (settings) =>
    HttpRouter.add(
      "GET",
      "/v1",
      HttpServerResponse.jsonUnsafe({
        name: `${settings.productName} control API`,
        version: "1",
        docs: `${settings.publicUrl}/v1/docs`,
        openapi: `${settings.publicUrl}/v1/openapi.json`
      })
    )
  )
)
