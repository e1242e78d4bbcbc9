import { Kernel } from "@hostplane/core"
import type * as Edge from "./Edge.ts"
import { Context, Effect, Layer } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import type * as Http from "node:http"

/** One cookie's value from a `Cookie` header, decoded as Effect's parser decodes it; undefined when absent. */
export const cookieOf = (header: string | undefined, name: string): string | undefined => {
  if (header === undefined) return undefined
  for (const part of header.split(";")) {
    const eq = part.indexOf("=")
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue
    const raw = part.slice(eq + 1).trim()
    try {
      return decodeURIComponent(raw)
    } catch {
      return raw
    }
  }
  return undefined
}

const unavailable = { code: "worker_unavailable", message: "this node runs no worker code" }

/**
 * Runs a request on a project's worker (decisions.md part 13) once the edge's rules sent it there: the host's worker
 * runtime answers with the worker's response, streamed, or with the edge's own `worker_*` error envelopes. A host
 * without one provides `WorkerInvoker.off`: every worker request answers 503 `worker_unavailable`.
 */
export class WorkerInvoker extends Context.Service<
  WorkerInvoker,
  {
    readonly invoke: (
      target: Edge.WorkerTarget,
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
    /**
     * The same on node's own request and response (HTTP/1.1 or the HTTP/2 compatibility API): the edge's lane for
     * worker requests, which skips Effect's HTTP layer on the busiest path. Answers on `response` and resolves the
     * status sent.
     */
    readonly serveNode: (
      target: Edge.WorkerTarget,
      request: Http.IncomingMessage,
      response: Http.ServerResponse
    ) => Promise<number>
  }
>()("@hostplane/node/edge/WorkerInvoker") {
  /** No worker runtime on this host. */
  static readonly off: Layer.Layer<WorkerInvoker> = Layer.sync(WorkerInvoker, () =>
    Kernel.portOff({
      invoke: () =>
        Effect.succeed(
          HttpServerResponse.jsonUnsafe(unavailable, {
            status: 503,
            headers: {
              "x-content-type-options": "nosniff",
              "referrer-policy": "strict-origin-when-cross-origin",
              "cache-control": "no-store"
            }
          })
        ),
      serveNode: (_target, request, response) => {
        request.resume()
        response.writeHead(503, {
          "content-type": "application/json",
          "x-content-type-options": "nosniff",
          "referrer-policy": "strict-origin-when-cross-origin",
          "cache-control": "no-store"
        })
        response.end(JSON.stringify(unavailable))
        return Promise.resolve(503)
      }
    })
  )
}
