import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Config, Duration, Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"

/** A listen address as `parseListen` answers it. */
export interface Address {
  readonly host: string
  readonly port: number
}

/** How the HTTP listeners treat connections: decisions.md part 15's keep-alive and shutdown. */
export interface ConnectionSettings {
  /** Idle time a kept-alive connection stays open (`SERVICE_KEEPALIVE_TIMEOUT`, default 65 s). */
  readonly keepAlive: Duration.Duration
  /** How long a stop waits for requests in flight (`SERVICE_SHUTDOWN_TIMEOUT`, default 25 s). */
  readonly shutdown: Duration.Duration
}

/**
 * Above the 60 s idle timeout common to load balancers: a balancer must be the side that closes an idle connection,
 * else it may reuse one the server is closing at that moment and answer 502.
 */
export const connectionSettings = Config.all({
  keepAlive: Config.Duration("SERVICE_KEEPALIVE_TIMEOUT").pipe(Config.withDefault(Duration.seconds(65))),
  shutdown: Config.Duration("SERVICE_SHUTDOWN_TIMEOUT").pipe(Config.withDefault(Duration.seconds(25)))
})

/** A listener could not take its address: which one, where, and the setting that moves it. */
export class ListenError extends Schema.TaggedError<ListenError>()("ListenError", {
  message: Schema.String,
  listener: Schema.String,
  address: Schema.String,
  setting: Schema.String,
  code: Schema.String
}) {}

const socketCodes: Record<string, string> = {
  EADDRINUSE: "address already in use",
  EACCES: "permission denied (ports below 1024 need privileges)",
  EADDRNOTAVAIL: "address not available on this machine"
}

/** The socket error in a failed bind's cause, wherever the adapter put it (a failure, a defect, a wrapped cause). */
const socketError = (
  cause: Cause.Cause<unknown>
): { readonly code: string; readonly text: string; readonly address?: Address } | undefined => {
  for (const reason of cause.reasons) {
    const value: unknown = Cause.isFailReason(reason)
      ? reason.error
      : Cause.isDieReason(reason)
        ? reason.defect
        : undefined
    for (let current = value, depth = 0; typeof current === "object" && current !== null && depth < 4; depth++) {
      const { code, message, address, port } = current as Record<string, unknown>
      if (typeof code === "string" && code in socketCodes) {
        return {
          code,
          text: socketCodes[code]!,
          ...(typeof address === "string" && typeof port === "number" ? { address: { host: address, port } } : {})
        }
      }
      // The name server reports a failed bind (UDP or TCP) by message only.
      if (typeof message === "string" && /cannot listen/i.test(message)) return { code: "EADDRINUSE", text: message }
      current = (current as { cause?: unknown }).cause
    }
  }
  return undefined
}

export const formatAddress = ({ host, port }: Address) => `${host.includes(":") ? `[${host}]` : host}:${port}`

/**
 * `layer` with a bind failure turned into a `ListenError` naming the listener, its address and its setting, so an
 * operator who starts a second server on the same ports reads what to change instead of a stack trace.
 */
export const namedBind = <A, E, R>(
  layer: Layer.Layer<A, E, R>,
  listener: { readonly name: string; readonly address?: Address | undefined; readonly setting: string }
): Layer.Layer<A, E | ListenError, R> =>
  // The replacement always fails, so the layer's output stays `A` (catchCause would type it `A & never`).
  Layer.catchCause(layer, (cause): Layer.Layer<never, E | ListenError> => {
    const found = socketError(cause)
    if (found === undefined) return Layer.effectDiscard(Effect.failCause(cause))
    const where = listener.address ?? found.address
    const address = where === undefined ? "its address" : formatAddress(where)
    return Layer.effectDiscard(
      Effect.fail(
        new ListenError({
          message: `the ${listener.name} listener cannot listen on ${address}: ${found.text} (${found.code}); set ${listener.setting} to another address`,
          listener: listener.name,
          address,
          setting: listener.setting,
          code: found.code
        })
      )
    )
  }) as unknown as Layer.Layer<A, E | ListenError, R>

/**
 * Calls `begin` when `server`'s graceful stop begins: Effect's node server stops by calling `close`, and Node says
 * nothing of it until every connection has ended.
 */
export const onStopBegin = (server: ReturnType<typeof createServer>, begin: () => void) => {
  const close = server.close.bind(server)
  server.close = ((callback?: (error?: Error) => void) => {
    begin()
    return close(callback)
  }) as typeof server.close
}

/**
 * Once `server`'s stop begins, a connection closes as soon as its last response ends: Node's `close` closes only the
 * connections idle at that moment, so one whose request was in flight would idle out its keep-alive while the stop
 * waits for it.
 */
const closeWhenIdleOnStop = (server: ReturnType<typeof createServer>) =>
  onStopBegin(server, () => {
    const sweep = setInterval(() => server.closeIdleConnections(), 100)
    sweep.unref()
    server.once("close", () => clearInterval(sweep))
  })

/**
 * A `node:http` listener on `address` with part 15's keep-alive and a graceful stop: on shutdown it stops accepting,
 * closes idle connections and waits up to `shutdown` for requests in flight, closing each connection as it falls idle.
 */
export const httpListener = (
  listener: { readonly name: string; readonly address: Address; readonly setting: string },
  settings: ConnectionSettings,
  /** Runs on the server before it listens (the edge puts its worker lane in front of the app's handler). */
  prepare: (server: ReturnType<typeof createServer>) => void = () => {}
) =>
  namedBind(
    NodeHttpServer.layer(
      () => {
        const server = createServer()
        closeWhenIdleOnStop(server)
        prepare(server)
        server.keepAliveTimeout = Duration.toMillis(settings.keepAlive)
        // Node drops a kept-alive connection whose next request's headers take longer than this: keep it above the
        // idle time, so a request sent just before the idle limit still has its headers read.
        server.headersTimeout = Math.max(server.headersTimeout, server.keepAliveTimeout + 1_000)
        server.requestTimeout = Math.max(server.requestTimeout, server.headersTimeout)
        return server
      },
      { host: listener.address.host, port: listener.address.port, gracefulShutdownTimeout: settings.shutdown }
    ),
    listener
  )
