import type { Readable } from "node:stream"
import { NodeStream } from "@effect/platform-node"
import { Deployments, type Errors } from "@hostplane/core"
import { Effect, Layer, Option, type Stream } from "effect"
import * as ArtifactStoreDisk from "./ArtifactStoreDisk.ts"
import { pass } from "./BundlePass.ts"
import * as InflateWorker from "./InflateWorker.ts"

export interface Options {
  /** Limits to enforce instead of decisions.md's (tests use small ones); each one left out keeps its default. */
  readonly limits?: Partial<Deployments.BundleLimits>
  /** The declared size from which a disk store's upload is read on the worker thread (tests: 0, every one). */
  readonly workerFromBytes?: number
}

/**
 * Uploads declared this large or larger, to a disk store, are inflated, checked, hashed and written on a worker
 * thread (`InflateWorker.ts`), the main thread only handing it the body, so the two halves of the work run on two
 * cores (a 95 MiB upload took about two thirds of the wall time at a load of 12-20, for about the same CPU). Smaller
 * ones stay in the process: a 10 MiB upload gained nothing measurable, and the thread costs about 35 MiB of RSS while
 * it lives and 0.3 CPU-s to start (bench/README.md, `bench:upload`).
 */
const workerFromBytes = 16 * 1024 * 1024

export const make = (
  store: Deployments.ArtifactStore["Service"],
  options: Options = {}
): Deployments.BundleReader["Service"] => {
  const limits: Deployments.BundleLimits = { ...Deployments.BundleLimits, ...options.limits }
  const folder = ArtifactStoreDisk.folder(store)
  const workerFrom = options.workerFromBytes ?? workerFromBytes

  const read = Effect.fn("BundleReader.read")(function* <E>(
    body: Stream.Stream<Uint8Array, E>,
    declaredBytes?: number
  ) {
    const { stored, storedTar, inspected } =
      folder !== undefined && (declaredBytes ?? 0) >= workerFrom
        ? yield* InflateWorker.pass(folder, limits, body)
        : yield* pass(store.put, limits, body)
    if (Option.isNone(yield* store.index(stored.digest))) {
      yield* store.putIndex(stored.digest, { tar: storedTar.digest, files: inspected.files })
    }
    return {
      digest: stored.digest,
      bytes: stored.bytes,
      files: inspected.files.length,
      uncompressedBytes: inspected.uncompressedBytes,
      manifest: inspected.manifest,
      created: [stored, storedTar].filter((artifact) => artifact.created).map((artifact) => artifact.digest)
    }
  })

  const discard = (bundle: Deployments.ReadBundle) => store.discard(bundle.created)

  return Deployments.BundleReader.of({ limits, read, discard })
}

/** The reader over the host's ArtifactStore. */
export const layer = (options: Options = {}): Layer.Layer<Deployments.BundleReader, never, Deployments.ArtifactStore> =>
  Layer.effect(
    Deployments.BundleReader,
    Effect.gen(function* () {
      return make(yield* Deployments.ArtifactStore, options)
    })
  )

/** A Node request body as the reader's input; a body that breaks off is a `truncated` bundle. */
export const bodyFrom = (readable: Readable): Stream.Stream<Uint8Array, Errors.InvalidBundle> =>
  NodeStream.fromReadable({
    evaluate: () => readable,
    onError: () => Deployments.invalidBundle("truncated", "the upload broke off before the end of the bundle")
  })
