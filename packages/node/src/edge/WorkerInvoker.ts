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

/** A bodiless HTTP/1.1 request as the byte lane scanned it (`HttpHead.ts`): every header once, names lowercased. */
export interface SpliceRequest {
  readonly method: "GET" | "HEAD"
  /** Path and query, as sent. */
  readonly target: string
  readonly headers: Readonly<Record<string, string>>
  /** The client's address. */
  readonly client: string | undefined
}

/** One invocation of a worker the byte lane forwards: its event's edge half (decisions.md part 13). */
export interface SpliceInvocation {
  readonly id: string
  readonly end: (
    end: { readonly outcome: "ok" | "exception" | "timeout" | "canceled"; readonly status: number | null } | null
  ) => void
}

/** The request the byte lane sends to a worker's socket, and what it owes the runtime. */
export interface SpliceCall {
  readonly socket: string
  readonly hot: boolean
  /** The request head for the socket (latin1 text): the client's, rewritten as the edge rewrites every worker request. */
  readonly head: string
  readonly invocation: SpliceInvocation
  /** Ends the request's count on its socket, once its response ended or failed. */
  readonly done: () => void
}

/** The edge's own answer instead of a worker's (an error envelope); the invocation's end is already reported. */
export interface SpliceRefusal {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * What the byte lane (`ByteLane.ts`) needs of the worker runtime to forward a bodiless request without node's HTTP
 * server: the same routing, headers, invocations, deadlines and answers as `serveNode`, one step at a time.
 */
export interface WorkerSplice {
  /**
   * The socket and head for a request to `target`, its invocation begun (a promise while the project's env is made or
   * its shard comes up); `undefined` when `serveNode` should answer it (the runtime is off, the env cannot be made,
   * the shard did not come up). `again` asks once more for a request whose first socket failed before any answer: the
   * same invocation, on the loader shard when `loaderOnly`.
   */
  readonly call: (
    target: Edge.WorkerTarget,
    request: SpliceRequest,
    again?: { readonly invocation: SpliceInvocation; readonly loaderOnly: boolean }
  ) => SpliceCall | undefined | Promise<SpliceCall | undefined>
  /** The edge's answer instead of the worker's response (it threw, or gave none), or `undefined` to forward it. */
  readonly answerOf: (
    call: SpliceCall,
    status: number,
    headers: Readonly<Record<string, string | Array<string>>>
  ) => SpliceRefusal | undefined
  /** The edge's answer when the worker missed its deadline, or its socket failed before it answered. */
  readonly refuse: (call: SpliceCall, why: "timeout" | "unavailable") => SpliceRefusal
  /** Calls `fire` once the worker's time is up, unless the returned `clear` comes first. */
  readonly deadline: (fire: () => void) => () => void
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
    /** The byte lane's steps; absent when the byte lane should leave every connection to node's HTTP server. */
    readonly splice?: WorkerSplice
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
