import { NodeHttpServer } from "@effect/platform-node"
import { ArtifactStoreDisk, BundleReader, ObjectStoreS3, S3Bucket, TokensNode } from "@hostplane/adapters-providers"
import { EndUser, Kernel, Storage, Tls } from "@hostplane/core"
import { Config, ConfigProvider, Duration, Effect, Layer, Option, Redacted } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { Edge } from "../edge/Edge.ts"
import { edgeApp } from "../edge/EdgeApp.ts"
import { installLane, makeEdgeLane } from "../edge/EdgeLane.ts"
import { WorkerInvoker } from "../edge/WorkerInvoker.ts"
import { ConvergeWakeups, WorkerInvokerOn } from "../runtime/WorkerInvokerLive.ts"
import { runtimeSettingsConfig, type RuntimeSettings, WorkerRuntime } from "../runtime/WorkerRuntime.ts"
import * as ArtifactStoreNodeApi from "./ArtifactStoreNodeApi.ts"
import { visitorCallTimeout } from "./NodeApiClient.ts"
import {
  RemoteState,
  remoteAccess,
  remoteAiGateway,
  remoteDatabaseAuthority,
  remoteDatabaseNode,
  remoteEdgeView,
  remoteEndUsers,
  remoteEvents,
  remoteMailRelay,
  remoteNodes,
  remoteSignIn
} from "./RemoteControl.ts"

/** What a node on another machine is given: the control plane's URL and the node token, and its own places. */
export interface RemoteNodeOptions {
  /** The control plane's API origin (`SERVICE_CONTROL_URL`). */
  readonly controlUrl: string
  /** `SERVICE_NODE_TOKEN`, as the control plane has it. */
  readonly token: Redacted.Redacted<string>
  /** The node's own data directory: its bundle cache (`<dir>/remote-artifacts`). */
  readonly dataDir: string
  /** The edge's address (`SERVICE_EDGE_LISTEN`). */
  readonly listen: { readonly host: string; readonly port: number }
  readonly workers: RuntimeSettings
  /** The storage add-on's bucket, the control plane's own (`SERVICE_S3_*`); none: `env.storage` is absent here. */
  readonly bucket: Option.Option<S3Bucket.S3Settings>
  /** How often the node state is read (ms). */
  readonly pollMs?: number
  /**
   * How long the node waits on the control plane for a call a visitor waits on (an access check, a pass, a project's
   * secrets, a bundle's next bytes), in ms: past it the visitor is answered 503 (`SERVICE_NODE_VISITOR_TIMEOUT`).
   */
  readonly visitorTimeoutMs: number
}

/** The listen setting as `host:port` (`:8081` and `8081` listen on 127.0.0.1). */
const parseListen = (value: string): { readonly host: string; readonly port: number } => {
  const trimmed = value.trim()
  const colon = trimmed.lastIndexOf(":")
  const host = colon <= 0 ? "127.0.0.1" : trimmed.slice(0, colon).replace(/^\[(.*)\]$/, "$1")
  const port = Number(colon < 0 ? trimmed : trimmed.slice(colon + 1))
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`SERVICE_EDGE_LISTEN: no port in ${value}`)
  return { host, port }
}

/** The remote node's settings from the environment (docs/settings.md, "A node on another machine"). */
export const remoteNodeConfig: Config.Config<RemoteNodeOptions> = Config.all({
  controlUrl: Config.String("SERVICE_CONTROL_URL").pipe(
    Config.flatMap((url) => {
      const origin = URL.canParse(url.trim()) ? new URL(url.trim()) : undefined
      return origin !== undefined && (origin.protocol === "http:" || origin.protocol === "https:")
        ? Config.succeed(url.trim().replace(/\/+$/, ""))
        : Config.fail(new ConfigProvider.SourceError({ message: `SERVICE_CONTROL_URL is an http(s) URL, not ${url}` }))
    })
  ),
  token: Config.Redacted("SERVICE_NODE_TOKEN"),
  dataDir: Config.String("SERVICE_DATA_DIR").pipe(Config.withDefault(".hostplane")),
  listen: Config.String("SERVICE_EDGE_LISTEN").pipe(Config.withDefault("127.0.0.1:8081"), Config.map(parseListen)),
  workers: runtimeSettingsConfig,
  bucket: S3Bucket.settingsConfig,
  visitorTimeoutMs: Config.Duration("SERVICE_NODE_VISITOR_TIMEOUT").pipe(
    Config.withDefault(Duration.millis(visitorCallTimeout)),
    Config.map((duration) => Duration.toMillis(duration))
  )
})

/**
 * A node on another machine (decisions.md parts 6 and 13): the edge and the worker runtime with nothing of the control
 * plane but its node API. Hosts, deployments and access modes come from the node state, bundles by digest into the
 * node's own folder, secrets from `GET /v1/node/projects/{id}/secrets`; invocation events, storage usage, mail and AI
 * calls go back over the node API and the AI gateway. Protected deployments (`org`, `password`) and end-user sign-in
 * answer 503 here: their passes and sessions are the control plane's.
 */
export const remoteNodeLayer = (options: RemoteNodeOptions) => {
  const api = { url: options.controlUrl, token: options.token, visitorTimeoutMs: options.visitorTimeoutMs }
  const state = RemoteState.layer({ ...api, ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }) })
  const artifacts = ArtifactStoreNodeApi.layer(api).pipe(
    Layer.provide(
      BundleReader.layer().pipe(
        Layer.provideMerge(ArtifactStoreDisk.layer(Path.resolve(options.dataDir, "remote-artifacts")))
      )
    )
  )
  const objects = Option.match(options.bucket, {
    onNone: () => Storage.ObjectStore.off,
    onSome: (settings) => ObjectStoreS3.layer(S3Bucket.make(settings))
  })
  const control = Layer.mergeAll(remoteNodes, remoteMailRelay, remoteAiGateway).pipe(Layer.provideMerge(state))
  const invoker = options.workers.enabled
    ? WorkerInvokerOn.pipe(
        Layer.provide(
          Layer.mergeAll(
            WorkerRuntime.layer(options.workers),
            remoteDatabaseNode,
            EndUser.EndUserDirectory.off,
            TokensNode.layer,
            objects,
            remoteEvents,
            remoteEndUsers,
            remoteDatabaseAuthority,
            // No feed of the control plane's changes reaches a node elsewhere: it reads the state every second.
            ConvergeWakeups.none
          )
        ),
        // The invoker's first convergence reads the state: the node waits for the control plane first.
        Layer.provide(Layer.effectDiscard(RemoteState.ready))
      )
    : WorkerInvoker.off
  const edge = Edge.layer.pipe(
    Layer.provide(
      Layer.mergeAll(
        remoteEdgeView,
        remoteAccess,
        remoteSignIn,
        Kernel.Settings.make({ publicUrl: options.controlUrl })
      )
    )
  )
  return Layer.mergeAll(edge, invoker, Tls.EdgeTls.off).pipe(Layer.provideMerge(Layer.mergeAll(artifacts, control)))
}

/** A running remote node: its edge's address. */
export interface RemoteNodeServer {
  readonly port: number
}

/** The remote node's edge listening on `options.listen`, until the scope closes. */
export const serveRemoteNode = (options: RemoteNodeOptions) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const context = yield* Layer.buildWithScope(remoteNodeLayer(options), scope)
    const handler = yield* NodeHttpServer.makeHandler(edgeApp, { scope }).pipe(Effect.provideContext(context))
    const lane = yield* makeEdgeLane("http", () => Effect.void).pipe(Effect.provideContext(context))
    const server = installLane(
      Http.createServer((request, response) => handler(request, response)),
      lane
    )
    yield* Effect.acquireRelease(
      Effect.callback<void, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(options.listen.port, options.listen.host, () => resume(Effect.void))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    const port = (server.address() as AddressInfo).port
    yield* Effect.logInfo(
      `hostplane node: edge on http://${options.listen.host}:${port}/, control plane ${options.controlUrl}`
    )
    return { port } satisfies RemoteNodeServer
  })
