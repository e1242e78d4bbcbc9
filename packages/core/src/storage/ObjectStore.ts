import { Context, Effect, Layer, type Option, Schema, Stream } from "effect"
import { portOff } from "../kernel/Port.ts"

/** A stored object as a listing shows it. */
export interface ObjectInfo {
  readonly key: string
  readonly bytes: number
  /** Changes whenever the key is written again (an opaque string; the bucket's ETag on S3). */
  readonly etag: string
  /** When the object was last written, RFC 3339. */
  readonly uploaded: string
}

/** The object store failed: a key it does not hold, a key outside the rules, or the backend itself. */
export class ObjectStoreError extends Schema.TaggedError<ObjectStoreError>()("ObjectStoreError", {
  reason: Schema.Literals(["NotFound", "InvalidKey", "Unavailable"]),
  message: Schema.String
}) {}

/** Longest key, in UTF-8 bytes (S3's limit). */
export const maxKeyBytes = 1024

/** Longest segment, in UTF-8 bytes (a file name's limit, so a folder can hold every key). */
export const maxSegmentBytes = 255

const utf8Length = (value: string) => new TextEncoder().encode(value).byteLength

/**
 * Why `key` is not a valid object key, or undefined: 1..1024 UTF-8 bytes of `/`-separated segments of at most 255
 * bytes, none empty, `.` or `..`, and no NUL or backslash. The same rule in every adapter, so a key valid in one is
 * valid in all.
 */
export const keyProblem = (key: string): string | undefined => {
  if (key === "") return "a key is not empty"
  if (utf8Length(key) > maxKeyBytes) return `a key is at most ${maxKeyBytes} bytes`
  if (/[\0\\]/.test(key) || !key.isWellFormed()) return "a key holds no NUL, backslash or unpaired surrogate"
  const segments = key.split("/")
  if (segments.some((segment) => segment === "" || segment === "." || segment === ".."))
    return "a key's segments are not empty, `.` or `..`"
  if (segments.some((segment) => utf8Length(segment) > maxSegmentBytes))
    return `a key's segments are at most ${maxSegmentBytes} bytes`
  return undefined
}

/** Why `prefix` is not a valid listing prefix, or undefined: empty, or the start of some valid key. */
export const prefixProblem = (prefix: string): string | undefined =>
  prefix === "" ? undefined : keyProblem(`${prefix}x`)

/**
 * Where project objects live (spec 4.7): bytes by key, streamed in and out, never buffered whole. Each project's
 * objects are under its prefix; the node reads and writes them, the control plane deletes them with the project.
 * A local folder by default (`<data dir>/storage/`), an S3-compatible bucket behind the same port.
 */
export class ObjectStore extends Context.Service<
  ObjectStore,
  {
    /** Stores the stream under `key`, replacing what it held only once the whole stream is kept. */
    readonly put: <E>(
      key: string,
      body: Stream.Stream<Uint8Array, E>
    ) => Effect.Effect<ObjectInfo, E | ObjectStoreError>
    /** What `key` holds (as a listing shows it), or none. */
    readonly head: (key: string) => Effect.Effect<Option.Option<ObjectInfo>, ObjectStoreError>
    /** The bytes of `key`; `NotFound` when it holds none. */
    readonly get: (key: string) => Stream.Stream<Uint8Array, ObjectStoreError>
    /** Every object whose key starts with `prefix` (a plain string prefix), in no particular order. */
    readonly list: (prefix: string) => Stream.Stream<ObjectInfo, ObjectStoreError>
    /** Removes `key`; false when it held nothing. */
    readonly remove: (key: string) => Effect.Effect<boolean, ObjectStoreError>
    /** Removes every object whose key starts with `prefix`; how many. */
    readonly removePrefix: (prefix: string) => Effect.Effect<number, ObjectStoreError>
  }
>()("@hostplane/core/storage/ObjectStore") {
  /** No object store: the storage add-on is not connected (503 `no_core`) and a project delete has nothing to remove. */
  static readonly off: Layer.Layer<ObjectStore> = Layer.sync(ObjectStore, () => {
    const refused = new ObjectStoreError({ reason: "Unavailable", message: "no object store" })
    return portOff({
      put: () => Effect.fail(refused),
      head: () => Effect.fail(refused),
      get: () => Stream.fail(refused),
      list: () => Stream.fail(refused),
      remove: () => Effect.fail(refused),
      removePrefix: () => Effect.fail(refused)
    })
  })
}
