import { createHash } from "node:crypto"
import { createWriteStream } from "node:fs"
import type { Readable } from "node:stream"
import { createRequire } from "node:module"
import { pipeline } from "node:stream/promises"
import type * as S3 from "@aws-sdk/client-s3"
import { NodeStream } from "@effect/platform-node"
import { Config, ConfigProvider, Data, Effect, Exit, Option, Redacted, Stream } from "effect"

/**
 * The object store settings of decisions.md part 15. `SERVICE_S3_URL` is the endpoint and the bucket, path style
 * (`http://127.0.0.1:4568/hostplane`, `https://s3.eu-west-1.amazonaws.com/my-bucket`).
 */
export interface S3Settings {
  /** The endpoint without the bucket: `https://s3.eu-west-1.amazonaws.com`. */
  readonly endpoint: string
  readonly bucket: string
  readonly region: string
  /** Both unset: the SDK's own credential chain (`AWS_*` variables, instance roles). */
  readonly credentials: Option.Option<{
    readonly accessKeyId: Redacted.Redacted<string>
    readonly secretAccessKey: Redacted.Redacted<string>
  }>
  /** Prepended to every key (`prod/`), so one bucket can hold several installations. */
  readonly prefix: string
}

/** The endpoint and bucket of a path-style bucket URL, or why it is not one. */
export const parseBucketUrl = (url: string): { readonly endpoint: string; readonly bucket: string } | string => {
  if (!URL.canParse(url)) return "SERVICE_S3_URL is not a URL"
  const parsed = new URL(url)
  if (!["http:", "https:"].includes(parsed.protocol)) return "SERVICE_S3_URL must be an http or https URL"
  if (parsed.username !== "" || parsed.password !== "" || parsed.search !== "" || parsed.hash !== "") {
    return "SERVICE_S3_URL holds no credentials, query or fragment: the keys have their own settings"
  }
  const segments = parsed.pathname.split("/").filter((segment) => segment !== "")
  const bucket = segments.pop()
  if (bucket === undefined) return "SERVICE_S3_URL ends with the bucket name (path style: https://host/bucket)"
  return { endpoint: `${parsed.origin}${segments.map((segment) => `/${segment}`).join("")}`, bucket }
}

const setting = (name: string) =>
  Config.String(name).pipe(Config.option, Config.map(Option.filter((value) => value.trim() !== "")))

const secret = (name: string) =>
  Config.Redacted(name).pipe(Config.option, Config.map(Option.filter((value) => Redacted.value(value).trim() !== "")))

const configError = (message: string) => Config.fail(new ConfigProvider.SourceError({ message }))

/** The `SERVICE_S3_*` settings: none when `SERVICE_S3_URL` is unset (artifacts, backups and objects stay on disk). */
export const settingsConfig: Config.Config<Option.Option<S3Settings>> = Config.all({
  url: setting("SERVICE_S3_URL"),
  region: setting("SERVICE_S3_REGION"),
  accessKeyId: secret("SERVICE_S3_ACCESS_KEY_ID"),
  secretAccessKey: secret("SERVICE_S3_SECRET_ACCESS_KEY"),
  prefix: setting("SERVICE_S3_PREFIX")
}).pipe(
  Config.flatMap((env): Config.Config<Option.Option<S3Settings>> => {
    if (Option.isNone(env.url)) return Config.succeed(Option.none())
    const parsed = parseBucketUrl(env.url.value)
    if (typeof parsed === "string") return configError(parsed)
    if (Option.isSome(env.accessKeyId) !== Option.isSome(env.secretAccessKey)) {
      return configError("SERVICE_S3_ACCESS_KEY_ID and SERVICE_S3_SECRET_ACCESS_KEY are set together, or neither")
    }
    const prefix = Option.getOrElse(env.prefix, () => "")
    if (prefix.startsWith("/") || prefix.includes("//")) {
      return configError("SERVICE_S3_PREFIX does not start with / or hold //")
    }
    return Config.succeed(
      Option.some({
        ...parsed,
        region: Option.getOrElse(env.region, () => "us-east-1"),
        credentials:
          Option.isSome(env.accessKeyId) && Option.isSome(env.secretAccessKey)
            ? Option.some({ accessKeyId: env.accessKeyId.value, secretAccessKey: env.secretAccessKey.value })
            : Option.none(),
        // A prefix names a folder: `prod` and `prod/` mean the same.
        prefix: prefix === "" || prefix.endsWith("/") ? prefix : `${prefix}/`
      })
    )
  })
)

/** What went wrong talking to the bucket: a key it does not hold, a conditional write refused, or anything else. */
export class S3Failure extends Data.TaggedError("S3Failure")<{
  readonly reason: "NotFound" | "PreconditionFailed" | "Unavailable"
  /** The bucket's error name (`NoSuchKey`, `KeyTooLongError`, `AccessDenied`...), or the client's. */
  readonly name: string
  readonly message: string
}> {}

const missing = (operation: string, key: string, field: string) =>
  new S3Failure({
    reason: "Unavailable",
    name: "InvalidResponse",
    message: `S3 ${operation} ${key}: no ${field} in the answer`
  })

/** Whether a failure is the bucket's (and not the failure of a stream being uploaded). */
export const isS3Failure = (error: unknown): error is S3Failure => error instanceof S3Failure

const statusOf = (cause: unknown): number | undefined => {
  if (typeof cause !== "object" || cause === null || !("$metadata" in cause)) return undefined
  const metadata = cause.$metadata
  return typeof metadata === "object" && metadata !== null && "httpStatusCode" in metadata
    ? Number(metadata.httpStatusCode)
    : undefined
}

const nameOf = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "name" in cause ? String(cause.name) : "Error"

/** The failure of `operation` on `key`; the message names the bucket's answer, never a credential. */
export const failure = (operation: string, key: string) => (cause: unknown) => {
  const status = statusOf(cause)
  const name = nameOf(cause)
  const reason =
    status === 404 || name === "NoSuchKey" || name === "NotFound"
      ? "NotFound"
      : status === 412 || name === "PreconditionFailed"
        ? "PreconditionFailed"
        : "Unavailable"
  const detail = cause instanceof Error && cause.message !== "" ? cause.message : name
  return new S3Failure({ reason, name, message: `S3 ${operation} ${key}: ${detail}${status ? ` (${status})` : ""}` })
}

/** Parts of a multipart upload: bodies above one part go up in parts (decisions.md part 15: above 8 MiB). */
export const partBytes = 8 * 1024 * 1024

export interface Written {
  readonly bytes: number
  /** Lowercase hex SHA-256 of the bytes, computed as they passed. */
  readonly sha256: string
}

export interface Listed {
  /** The key relative to the settings' prefix. */
  readonly key: string
  readonly bytes: number
  readonly lastModified: Date | undefined
  /** The bucket's ETag, without its quotes. */
  readonly etag: string
}

const unquoted = (etag: string | undefined) => (etag ?? "").replace(/^"|"$/g, "")

/**
 * The SDK, loaded when a bucket is made rather than with the server: a server without `SERVICE_S3_URL` never uses it,
 * and it takes about 6 MiB of heap.
 */
const sdk = (): typeof S3 => createRequire(import.meta.url)("@aws-sdk/client-s3")

/** The client of decisions.md part 15: path style, the settings' region and keys, compatible checksum defaults. */
export const makeClient = (settings: S3Settings): S3.S3Client =>
  new (sdk().S3Client)({
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: true,
    ...(Option.isSome(settings.credentials)
      ? {
          credentials: {
            accessKeyId: Redacted.value(settings.credentials.value.accessKeyId),
            secretAccessKey: Redacted.value(settings.credentials.value.secretAccessKey)
          }
        }
      : {}),
    // The SDK's newer default (CRC32 trailers on every upload) is not spoken by every S3-compatible store (Garage,
    // Ceph RGW and R2 have each refused or mangled it in some version); checksums only where the API requires them.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // A bucket that does not answer fails the request instead of holding it: the caller answers 503.
    requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
    maxAttempts: 3
  })

/**
 * One bucket under one key prefix: streamed uploads (multipart above `partBytes`, aborted when the source fails or the
 * fiber is interrupted, so a key holds a whole object or what it held before), streamed and ranged reads, listings.
 * Keys given and answered are relative to the prefix.
 */
export const make = (settings: S3Settings, client: S3.S3Client = makeClient(settings)) => {
  const {
    AbortMultipartUploadCommand,
    CompleteMultipartUploadCommand,
    CopyObjectCommand,
    CreateMultipartUploadCommand,
    DeleteObjectCommand,
    DeleteObjectsCommand,
    GetObjectCommand,
    HeadObjectCommand,
    ListObjectsV2Command,
    PutObjectCommand,
    UploadPartCommand
  } = sdk()
  const Bucket = settings.bucket
  const full = (key: string) => `${settings.prefix}${key}`
  const send = <A>(operation: string, key: string, run: (signal: AbortSignal) => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: failure(operation, key) })

  /**
   * Streams `body` to `key` while hashing it: one PUT when it fits in one part, else a multipart upload whose parts are
   * filled in one buffer, reused once its part went up. The source is read no further while a part goes up, so an
   * upload holds one part in memory whatever its size (lib-storage's `Upload` concatenates each part anew from the
   * stream's chunks and keeps the previous one alive until the next is cut: about three parts per upload, and a bundle
   * is two uploads at once). A failing or interrupted upload aborts its multipart upload before it ends.
   */
  const upload = <E>(
    key: string,
    body: Stream.Stream<Uint8Array, E>,
    options: { readonly contentType?: string } = {}
  ): Effect.Effect<Written, E | S3Failure> =>
    Effect.suspend(() => {
      const Key = full(key)
      const type = options.contentType === undefined ? {} : { ContentType: options.contentType }
      const hash = createHash("sha256")
      let bytes = 0
      let part: Buffer | undefined
      let filled = 0
      let uploadId: string | undefined
      const done: Array<S3.CompletedPart> = []

      const sendPart = (data: Uint8Array) =>
        Effect.gen(function* () {
          if (uploadId === undefined) {
            const created = yield* send("upload", key, (abortSignal) =>
              client.send(new CreateMultipartUploadCommand({ Bucket, Key, ...type }), { abortSignal })
            )
            if (created.UploadId === undefined) return yield* Effect.fail(missing("upload", key, "UploadId"))
            uploadId = created.UploadId
          }
          const PartNumber = done.length + 1
          const answer = yield* send("upload", key, (abortSignal) =>
            client.send(new UploadPartCommand({ Bucket, Key, UploadId: uploadId, PartNumber, Body: data }), {
              abortSignal
            })
          )
          if (answer.ETag === undefined) return yield* Effect.fail(missing("upload", key, "ETag"))
          done.push({ PartNumber, ETag: answer.ETag })
        })

      // A full part goes up only once more bytes come: a body of exactly one part is one PUT.
      const take = (chunk: Uint8Array) =>
        Effect.gen(function* () {
          hash.update(chunk)
          bytes += chunk.byteLength
          for (let offset = 0; offset < chunk.byteLength;) {
            if (filled === partBytes) {
              yield* sendPart(part!)
              filled = 0
            }
            part ??= Buffer.allocUnsafe(partBytes)
            const n = Math.min(partBytes - filled, chunk.byteLength - offset)
            part.set(chunk.subarray(offset, offset + n), filled)
            filled += n
            offset += n
          }
        })

      const finish = Effect.gen(function* () {
        const rest = part === undefined ? Buffer.alloc(0) : part.subarray(0, filled)
        if (uploadId === undefined) {
          yield* send("upload", key, (abortSignal) =>
            client.send(new PutObjectCommand({ Bucket, Key, Body: rest, ...type }), { abortSignal })
          )
          return
        }
        yield* sendPart(rest)
        const id = uploadId
        yield* send("upload", key, (abortSignal) =>
          client.send(
            new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: id, MultipartUpload: { Parts: done } }),
            { abortSignal }
          )
        )
      })

      return Stream.runForEachArray(body, (chunks) => Effect.forEach(chunks, take, { discard: true })).pipe(
        Effect.andThen(finish),
        Effect.andThen(Effect.sync((): Written => ({ bytes, sha256: hash.digest("hex") }))),
        Effect.onExit((exit) =>
          Exit.isSuccess(exit) || uploadId === undefined
            ? Effect.void
            : // The parts sent so far are dropped; a store that refuses even this keeps them until its own expiry
              // rule (docs/object-storage.md), never under the key.
              send("abort", key, () =>
                client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId }))
              ).pipe(Effect.ignore)
        )
      )
    })

  /** Writes a small body in one request; with `ifAbsent`, only when the key holds nothing (false when it did). */
  const putSmall = (key: string, body: Uint8Array | string, options: { readonly ifAbsent?: boolean } = {}) =>
    send("put", key, (abortSignal) =>
      client.send(
        new PutObjectCommand({ Bucket, Key: full(key), Body: body, ...(options.ifAbsent ? { IfNoneMatch: "*" } : {}) }),
        { abortSignal }
      )
    ).pipe(
      Effect.as(true),
      Effect.catchIf(
        (error) => options.ifAbsent === true && error.reason === "PreconditionFailed",
        () => Effect.succeed(false)
      )
    )

  /** The bytes of `key` (or `length` bytes from `offset`), streamed; `NotFound` when the key holds nothing. */
  const get = (key: string, range?: { readonly offset: number; readonly length: number }) =>
    Stream.unwrap(
      Effect.map(
        send("get", key, (abortSignal) =>
          client.send(
            new GetObjectCommand({
              Bucket,
              Key: full(key),
              ...(range === undefined ? {} : { Range: `bytes=${range.offset}-${range.offset + range.length - 1}` })
            }),
            { abortSignal }
          )
        ),
        (answer) =>
          NodeStream.fromReadable<Uint8Array, S3Failure>({
            evaluate: () => answer.Body as Readable,
            onError: failure("read", key)
          })
      )
    )

  /** Writes the whole of `key` to the local `file` (created), streamed. */
  const download = (key: string, file: string) =>
    send("download", key, async (abortSignal) => {
      const answer = await client.send(new GetObjectCommand({ Bucket, Key: full(key) }), { abortSignal })
      await pipeline(answer.Body as Readable, createWriteStream(file, { flags: "wx", mode: 0o600 }), {
        signal: abortSignal
      })
    })

  /** The size, ETag and time of `key`, or none when it holds nothing. */
  const head = (key: string) =>
    send("head", key, (abortSignal) =>
      client.send(new HeadObjectCommand({ Bucket, Key: full(key) }), { abortSignal })
    ).pipe(
      Effect.map((answer) =>
        Option.some({
          bytes: answer.ContentLength ?? 0,
          etag: unquoted(answer.ETag),
          lastModified: answer.LastModified
        })
      ),
      Effect.catchIf(
        (error) => error.reason === "NotFound",
        () => Effect.succeedNone
      )
    )

  /** Every key starting with `prefix` (relative), page by page (1,000 a page). */
  const list = (prefix: string): Stream.Stream<Listed, S3Failure> =>
    Stream.paginate(undefined as string | undefined, (token) =>
      send("list", prefix, (abortSignal) =>
        client.send(
          new ListObjectsV2Command({
            Bucket,
            Prefix: full(prefix),
            ...(token === undefined ? {} : { ContinuationToken: token })
          }),
          { abortSignal }
        )
      ).pipe(
        Effect.map((page) => {
          const items = (page.Contents ?? []).flatMap((object): Array<Listed> =>
            object.Key === undefined
              ? []
              : [
                  {
                    key: object.Key.slice(settings.prefix.length),
                    bytes: object.Size ?? 0,
                    lastModified: object.LastModified,
                    etag: unquoted(object.ETag)
                  }
                ]
          )
          const next = page.IsTruncated === true ? page.NextContinuationToken : undefined
          return [items, next === undefined ? Option.none() : Option.some(next)] as const
        })
      )
    )

  const remove = (key: string) =>
    send("delete", key, (abortSignal) =>
      client.send(new DeleteObjectCommand({ Bucket, Key: full(key) }), { abortSignal })
    ).pipe(Effect.asVoid)

  /** Deletes keys in batches of 1,000 (one request each); fails when the bucket refused any of them. */
  const removeMany = (keys: ReadonlyArray<string>) =>
    Effect.forEach(
      Array.from({ length: Math.ceil(keys.length / 1000) }, (_, i) => keys.slice(i * 1000, i * 1000 + 1000)),
      (batch) =>
        send("delete", batch[0]!, (abortSignal) =>
          client.send(
            new DeleteObjectsCommand({
              Bucket,
              Delete: { Objects: batch.map((key) => ({ Key: full(key) })), Quiet: true }
            }),
            { abortSignal }
          )
        ).pipe(
          Effect.flatMap((answer) =>
            (answer.Errors ?? []).length === 0
              ? Effect.void
              : Effect.fail(
                  new S3Failure({
                    reason: "Unavailable",
                    name: answer.Errors![0]!.Code ?? "DeleteError",
                    message: `S3 delete refused ${answer.Errors!.length} keys: ${answer.Errors![0]!.Message ?? ""}`
                  })
                )
          )
        ),
      { discard: true }
    )

  /** Copies `from` to `to` inside the bucket (server side; one request up to 5 GiB). */
  const copy = (from: string, to: string) =>
    send("copy", to, (abortSignal) =>
      client.send(
        new CopyObjectCommand({
          Bucket,
          Key: full(to),
          CopySource: `${Bucket}/${full(from).split("/").map(encodeURIComponent).join("/")}`
        }),
        { abortSignal }
      )
    ).pipe(Effect.asVoid)

  return { settings, client, upload, putSmall, get, download, head, list, remove, removeMany, copy }
}

export type S3Bucket = ReturnType<typeof make>
