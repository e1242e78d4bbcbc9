import { Deployments, Errors } from "@hostplane/core"
import { Deferred, Effect, Layer, Option, Redacted, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { visitorCallTimeout } from "./NodeApiClient.ts"

/** Where a node on another machine reaches the control plane: its base URL and `SERVICE_NODE_TOKEN`. */
export interface NodeApiOptions {
  /** The server's API origin (`https://api.example.com`), without `/v1`. */
  readonly url: string
  readonly token: Redacted.Redacted<string>
  /** How long a call a visitor waits on may take, in ms (`SERVICE_NODE_VISITOR_TIMEOUT`; `visitorCallTimeout` unless given). */
  readonly visitorTimeoutMs?: number
}

const unavailable = (message: string) => new Errors.ArtifactStoreUnavailable({ message })

/**
 * How long the node API may take to start answering a bundle, and to send its next bytes: a visitor waits on the first
 * download of a deployment, so a control plane that takes the connection and never answers is a 503 to retry, not a
 * request that hangs. A large bundle that keeps coming is never cut.
 */
export const downloadIdleTimeout = visitorCallTimeout

/**
 * A node's `ArtifactStore` when the control plane runs elsewhere (decisions.md part 13): a bundle the node has not
 * seen is fetched once with `GET /v1/node/artifacts/{digest}`, read through the node's own `BundleReader` into its
 * local store (the same layout the server keeps: the gzipped tar, the inflated tar, the index) and kept there by
 * digest, so the edge and the worker runtime read files locally from then on. The bytes must hash to the digest asked
 * for: a server (or anything between) that answers other bytes fails the read and nothing is served from them.
 * `local` is the node's store and `reader` reads into it (`BundleReader.layer()` over `ArtifactStoreDisk`).
 */
export const make = Effect.fn("ArtifactStoreNodeApi.make")(function* (
  options: NodeApiOptions,
  local: Deployments.ArtifactStore["Service"],
  reader: Deployments.BundleReader["Service"]
) {
  const client = (yield* HttpClient.HttpClient).pipe(HttpClient.filterStatusOk)
  // Downloads run in the store's scope, not the first visitor's: one who leaves does not cancel the download the
  // others wait on, and the node's stop ends it.
  const scope = yield* Effect.scope
  const base = options.url.replace(/\/+$/, "")
  const idleTimeout = options.visitorTimeoutMs ?? downloadIdleTimeout
  // One fetch per digest at a time: concurrent first requests for a new deployment wait for the same download.
  const inFlight = new Map<Deployments.Digest, Deferred.Deferred<boolean, Errors.ArtifactStoreUnavailable>>()

  /** The bundle from the node API into the local store; false when the server has no bundle with this digest. */
  const download = Effect.fnUntraced(function* (digest: Deployments.Digest) {
    const request = HttpClientRequest.get(`${base}/v1/node/artifacts/${encodeURIComponent(digest)}`).pipe(
      HttpClientRequest.bearerToken(Redacted.value(options.token))
    )
    const response = yield* client.execute(request).pipe(
      Effect.timeoutOrElse({
        duration: idleTimeout,
        orElse: () =>
          Effect.fail(unavailable(`the node API did not answer for bundle ${digest} within ${idleTimeout} ms`))
      }),
      Effect.map(Option.some),
      Effect.catchTag("HttpClientError", (error) =>
        error.response?.status === 404
          ? Effect.succeed(Option.none())
          : Effect.fail(unavailable(`the node API did not serve bundle ${digest}: ${error.message}`))
      )
    )
    if (Option.isNone(response)) return false
    const read = yield* reader
      .read(
        response.value.stream.pipe(
          Stream.mapError((error) => unavailable(`bundle ${digest} broke off from the node API: ${error.message}`)),
          Stream.timeoutOrElse({
            duration: idleTimeout,
            orElse: () => Stream.fail(unavailable(`bundle ${digest}: the node API sent nothing for ${idleTimeout} ms`))
          })
        )
      )
      .pipe(
        Effect.catchTags({
          InvalidBundle: (error) => Effect.fail(unavailable(`bundle ${digest} from the node API: ${error.message}`)),
          PayloadTooLarge: (error) => Effect.fail(unavailable(`bundle ${digest} from the node API: ${error.message}`))
        })
      )
    if (read.digest !== digest) {
      return yield* unavailable(`the node API answered other bytes for ${digest} (they hash to ${read.digest})`)
    }
    return true
  })

  /** Whether the bundle is in the local store, fetching it first when it is not. */
  const ensure = (digest: Deployments.Digest): Effect.Effect<boolean, Errors.ArtifactStoreUnavailable> =>
    Effect.flatMap(local.index(digest), (index) => {
      if (Option.isSome(index)) return Effect.succeed(true)
      const running = inFlight.get(digest)
      if (running !== undefined) return Deferred.await(running)
      return Effect.flatMap(Deferred.make<boolean, Errors.ArtifactStoreUnavailable>(), (done) => {
        inFlight.set(digest, done)
        return download(digest).pipe(
          Effect.onExit((exit) =>
            Effect.andThen(
              Effect.sync(() => inFlight.delete(digest)),
              Deferred.done(done, exit)
            )
          ),
          Effect.forkIn(scope),
          Effect.andThen(Deferred.await(done))
        )
      })
    })

  return Deployments.ArtifactStore.of({
    // A node stores only what it fetched: a bundle is put by the control plane's upload, never here.
    put: local.put,
    putIndex: local.putIndex,
    discard: local.discard,
    has: (digest) => Effect.flatMap(local.has(digest), (held) => (held ? Effect.succeed(true) : ensure(digest))),
    open: (digest, range) =>
      Stream.unwrap(
        Effect.flatMap(local.has(digest), (held) =>
          held
            ? Effect.succeed(local.open(digest, range))
            : Effect.map(ensure(digest), (found) =>
                found ? local.open(digest, range) : Stream.fail(unavailable(`no bundle has digest ${digest}`))
              )
        )
      ),
    index: (bundle) => Effect.flatMap(ensure(bundle), (found) => (found ? local.index(bundle) : Effect.succeedNone)),
    file: (bundle, path) =>
      Effect.flatMap(ensure(bundle), (found) => (found ? local.file(bundle, path) : Effect.succeedNone))
  })
})

/**
 * `ArtifactStore` over the node API, provided the node's local store and reader (`BundleReader.layer()` over
 * `ArtifactStoreDisk.layer(dir)` from `@hostplane/adapters-providers`), requests over `fetch`.
 */
export const layer = (
  options: NodeApiOptions
): Layer.Layer<Deployments.ArtifactStore, never, Deployments.ArtifactStore | Deployments.BundleReader> =>
  Layer.effect(
    Deployments.ArtifactStore,
    Effect.gen(function* () {
      return yield* make(options, yield* Deployments.ArtifactStore, yield* Deployments.BundleReader)
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
