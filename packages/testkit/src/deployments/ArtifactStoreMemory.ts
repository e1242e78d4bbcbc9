import { createHash } from "node:crypto"
import { Deployments } from "@hostplane/core"
import { Effect, Layer, Option, Schema, Stream } from "effect"

const isDigest = Schema.is(Deployments.Digest)

/** Artifacts in memory, for tests: whole blobs by digest and bundle indexes, as the port describes them. */
export const make = Effect.sync(() => {
  const blobs = new Map<string, Uint8Array>()
  const indexes = new Map<string, Deployments.BundleIndex>()
  const open = (digest: Deployments.Digest, range?: Deployments.ByteRange): Stream.Stream<Uint8Array> =>
    Stream.suspend(() => {
      const bytes = blobs.get(digest)
      if (!isDigest(digest) || bytes === undefined) return Stream.die(new Error(`no artifact ${digest}`))
      if (range !== undefined && range.length <= 0) return Stream.empty
      return Stream.make(range === undefined ? bytes : bytes.subarray(range.offset, range.offset + range.length))
    })
  const store = Deployments.ArtifactStore.of({
    put: (bytes) =>
      Effect.map(Stream.mkUint8Array(bytes), (all) => {
        const digest = `sha256:${createHash("sha256").update(all).digest("hex")}`
        const created = !blobs.has(digest)
        if (created) blobs.set(digest, all)
        return { digest, bytes: all.byteLength, created }
      }),
    has: (digest) => Effect.sync(() => isDigest(digest) && blobs.has(digest)),
    open,
    putIndex: (bundle, index) =>
      Effect.sync(() => {
        if (!indexes.has(bundle)) indexes.set(bundle, index)
      }),
    index: (bundle) => Effect.sync(() => Option.fromUndefinedOr(indexes.get(bundle))),
    discard: (digests) =>
      Effect.sync(() => {
        for (const digest of digests) {
          blobs.delete(digest)
          indexes.delete(digest)
        }
      }),
    file: (bundle, path) =>
      Effect.sync(() =>
        Option.flatMap(Option.fromUndefinedOr(indexes.get(bundle)), (index) =>
          Option.map(
            Option.fromUndefinedOr(index.files.find((entry) => entry.path === path)),
            (entry): Deployments.StoredFile => ({
              path: entry.path,
              bytes: entry.bytes,
              content: open(index.tar, { offset: entry.offset, length: entry.bytes })
            })
          )
        )
      )
  })
  return { store, blobs, indexes }
})

export const layer: Layer.Layer<Deployments.ArtifactStore> = Layer.effect(
  Deployments.ArtifactStore,
  Effect.map(make, ({ store }) => store)
)
