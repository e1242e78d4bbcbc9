import { Context, Effect, Stream } from "effect"
import type { ArtifactStoreUnavailable, InvalidBundle, PayloadTooLarge } from "../errors/Errors.ts"
import type { Digest } from "./ArtifactStore.ts"
import type { BundleLimits, Manifest } from "./Manifest.ts"

/** An accepted bundle: stored under `digest` (the sha256 of its compressed bytes) and indexed. */
export interface ReadBundle {
  readonly digest: Digest
  /** Compressed bytes, as uploaded. */
  readonly bytes: number
  /** Regular files in the tar. */
  readonly files: number
  readonly uncompressedBytes: number
  readonly manifest: Manifest
  /** The artifacts this read stored that were not there before (the bundle, its inflated tar): what `discard` removes. */
  readonly created: ReadonlyArray<Digest>
}

/**
 * Reads an uploaded gzipped tar in one streaming pass: enforces the bundle limits (413) and the layout and manifest
 * rules (400 `invalid_bundle`) while the bytes stream into the ArtifactStore; a refused bundle commits nothing.
 */
export class BundleReader extends Context.Service<
  BundleReader,
  {
    /** The limits `read` enforces; a declared `Content-Length` over `compressedBytes` is refused before reading. */
    readonly limits: BundleLimits
    readonly read: <E>(
      body: Stream.Stream<Uint8Array, E>
    ) => Effect.Effect<ReadBundle, InvalidBundle | PayloadTooLarge | ArtifactStoreUnavailable | E>
    /** Removes what `read` stored for a bundle its deploy then refused (the worker check, the project's own rules). */
    readonly discard: (bundle: ReadBundle) => Effect.Effect<void, ArtifactStoreUnavailable>
  }
>()("@hostplane/core/deployments/BundleReader") {}
