import { NodeHttpServer } from "@effect/platform-node"
import { Tls } from "@hostplane/core"
import { type Context, Effect, Exit, Layer, Scope } from "effect"
import type * as Http from "node:http"
import { Edge, EdgeAccess } from "./edge/Edge.ts"
import { EdgeView } from "./edge/EdgeCache.ts"
import { edgeApp } from "./edge/EdgeApp.ts"
import { makeEdgeLane } from "./edge/EdgeLane.ts"
import { WorkerInvoker } from "./edge/WorkerInvoker.ts"
import * as AuthWorker from "./enduser/AuthWorker.ts"

/**
 * The node's edge rules with the end-user sign-in worker on `/__service/auth/*`, on the control plane's services (the
 * stores, hostnames, access policies and add-on configs a built hostplane holds).
 */
export const EdgeLive = Edge.layer.pipe(
  Layer.provide(Layer.mergeAll(AuthWorker.layer, EdgeView.layer, EdgeAccess.layer))
)

/** The services the edge reads: what `EdgeLive` needs from a built hostplane. */
export type EdgeServices = Layer.Services<typeof EdgeLive>

export interface EdgeListener {
  /** A `node:http` listener serving deployments by `Host`: the lane for held files, the edge app for the rest. */
  readonly listener: (request: Http.IncomingMessage, response: Http.ServerResponse) => void
  /** Stops the edge's cache and its background reads. */
  readonly dispose: () => Promise<void>
}

/**
 * The reference edge on the services of a hostplane built elsewhere in this process (`mount(...).context`), for a host
 * that serves deployments on a port of its own. `invoker` runs worker requests (`WorkerInvoker.off`: 503
 * `worker_unavailable`); there is no TLS listener, so nothing is redirected to https.
 */
export const makeEdgeListener = async (
  context: Context.Context<EdgeServices>,
  invoker: Layer.Layer<WorkerInvoker, unknown, EdgeServices | Edge> = WorkerInvoker.off
): Promise<EdgeListener> => {
  const scope = Effect.runSync(Scope.make())
  const dispose = () => Effect.runPromise(Scope.close(scope, Exit.void))
  try {
    const edge = Layer.mergeAll(invoker, Tls.EdgeTls.off).pipe(Layer.provideMerge(EdgeLive))
    const built = await Effect.runPromise(Layer.buildWithScope(edge, scope).pipe(Effect.provideContext(context)))
    const handler = await Effect.runPromise(
      NodeHttpServer.makeHandler(edgeApp, { scope }).pipe(Effect.provideContext(built))
    )
    const lane = await Effect.runPromise(makeEdgeLane("http", () => Effect.void).pipe(Effect.provideContext(built)))
    return { listener: (request, response) => lane(request, response, () => handler(request, response)), dispose }
  } catch (error) {
    await dispose()
    throw error
  }
}
