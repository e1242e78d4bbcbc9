import { Context, Effect, Option, Schema, Stream } from "effect"
import type { ArtifactStoreUnavailable } from "../errors/Errors.ts"

export const digestPattern = /^sha256:[0-9a-f]{64}$/

/** `sha256:<64 lowercase hex>` of an artifact's bytes. */
export const Digest = Schema.String.check(Schema.isPattern(digestPattern))
export type Digest = typeof Digest.Type

export const StoredArtifact = Schema.Struct({ digest: Digest, bytes: Schema.Number })
export type StoredArtifact = typeof StoredArtifact.Type

/** One regular file of a bundle: its path inside the bundle and where its bytes sit in the inflated tar. */
export const BundleFile = Schema.Struct({ path: Schema.String, offset: Schema.Number, bytes: Schema.Number })
export type BundleFile = typeof BundleFile.Type

/** The files of an accepted bundle: `tar` is the digest of its inflated tar, stored as an artifact of its own. */
export const BundleIndex = Schema.Struct({ tar: Digest, files: Schema.Array(BundleFile) })
export type BundleIndex = typeof BundleIndex.Type

export interface ByteRange {
  readonly offset: number
  readonly length: number
}

/** One file of a bundle, ready to serve: its size and its bytes. */
export interface StoredFile {
  readonly path: string
  readonly bytes: number
  readonly content: Stream.Stream<Uint8Array, ArtifactStoreUnavailable>
}

/**
 * Content-addressed bundle artifacts, never deleted once a deployment names them.
 *
 * Layout choice: the uploaded gzipped tar is kept as is (what `open(digest)` streams back), and once accepted, its
 * inflated tar is stored too, with an index path -> byte range. gzip has no random access, so serving a file from the
 * gzipped tar alone would inflate the bundle up to that file on every request; per-file blobs would cost one commit
 * (write, flush, rename) per file, 20,000 for the largest bundle. A range read of one object serves `assets/<path>`
 * in O(file) from local disk and from S3-style object storage alike. A store whose backend is remote (a bucket) fails
 * with `ArtifactStoreUnavailable` when it does not answer or has lost an object; the local folder never does.
 */
export class ArtifactStore extends Context.Service<
  ArtifactStore,
  {
    /**
     * Streams the bytes to a temporary object, then commits it under their sha256; the same bytes twice are stored
     * once. A stream that fails or is interrupted commits nothing.
     */
    readonly put: <E>(
      bytes: Stream.Stream<Uint8Array, E>
    ) => Effect.Effect<StoredArtifact & { readonly created: boolean }, E | ArtifactStoreUnavailable>
    readonly has: (digest: Digest) => Effect.Effect<boolean, ArtifactStoreUnavailable>
    /**
     * The stored bytes, or a range of them. A local store dies when the digest is absent (a digest is recorded only
     * after its commit); a remote one fails with `ArtifactStoreUnavailable`, since its objects can vanish under it.
     */
    readonly open: (digest: Digest, range?: ByteRange) => Stream.Stream<Uint8Array, ArtifactStoreUnavailable>
    /** Records where the files of a committed bundle are; indexing a bundle again keeps the first index. */
    readonly putIndex: (bundle: Digest, index: BundleIndex) => Effect.Effect<void, ArtifactStoreUnavailable>
    /** The index of a bundle, or none when it was never indexed. */
    readonly index: (bundle: Digest) => Effect.Effect<Option.Option<BundleIndex>, ArtifactStoreUnavailable>
    /**
     * One file of an indexed bundle by its path (`assets/app.js`); none when the bundle has no such file. A remote
     * store checks here that the bytes are still there, so a lost object is an answer, not a broken response body.
     */
    readonly file: (bundle: Digest, path: string) => Effect.Effect<Option.Option<StoredFile>, ArtifactStoreUnavailable>
    /**
     * Removes artifacts (and a bundle's index) that an upload committed and its deploy then refused: a refused bundle
     * keeps nothing (decisions.md part 13). Only for digests that upload's own `put` created (`created: true`), never
     * one a deployment names: the same bytes uploaded again meanwhile are refused by the same check.
     */
    readonly discard: (digests: ReadonlyArray<Digest>) => Effect.Effect<void, ArtifactStoreUnavailable>
  }
>()("@hostplane/core/deployments/ArtifactStore") {}
