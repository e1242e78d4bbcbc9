import type { Edge } from "@hostplane/core"
import { Context, type Effect } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"

/**
 * Runs a request on a project's worker (decisions.md part 13) once the edge's rules sent it there: the host's worker
 * runtime answers with the worker's response, streamed, or with the edge's own `worker_*` error envelopes. A host
 * without one answers 503 `worker_unavailable`.
 */
export class WorkerInvoker extends Context.Service<
  WorkerInvoker,
  {
    readonly invoke: (
      target: Edge.WorkerTarget,
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  }
>()("@hostplane/http/edge/WorkerInvoker") {}
