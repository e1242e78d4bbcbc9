import { Kernel, Node, Storage } from "@hostplane/core"
import { Cause, Effect, Exit, Option, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import type * as Http from "node:http"
import { BindingFailure, type BindingAnswer } from "./Failure.ts"
import { type BindingCall, type ServedBinding, workerBinding } from "./WorkerBinding.ts"

/** Longest key a worker may use, in UTF-8 bytes (R2's and part 13's). */
export const maxKeyBytes = 1024

/** Most keys one `delete` or `list` page takes or answers. */
const maxBatch = 1000

/** Bytes of the stored form of a key between two `/`: within every adapter's segment limit. */
const chunkBytes = 200

const utf8 = (text: string) => Buffer.byteLength(text, "utf8")

/** Characters kept as they are in the stored form; every other ASCII character is `%XX`. */
const plain = /^[A-Za-z0-9_-]$/

/**
 * A worker's key in the object store, under the project's prefix. Keys are opaque to the worker (any string of 1..1024
 * UTF-8 bytes, `/`, `..` and empty segments included), so each is escaped character by character (ASCII outside
 * `[A-Za-z0-9_-]` as `%XX`, other characters kept) and cut into segments of at most `chunkBytes` at fixed places. The
 * stored form of a prefix of a key is then a prefix of the key's stored form (listing by prefix works in the store),
 * it holds no `/` of the worker's (no key can reach another prefix) and no `.` segment.
 */
export const storedFormOf = (key: string): string => {
  let out = ""
  let chunk = 0
  for (const char of key) {
    const unit =
      plain.test(char) || char.codePointAt(0)! >= 0x80
        ? char
        : `%${char.codePointAt(0)!.toString(16).toUpperCase().padStart(2, "0")}`
    const size = utf8(unit)
    if (chunk + size > chunkBytes) {
      out += "/"
      chunk = 0
    }
    out += unit
    chunk += size
  }
  return out
}

export const keyOfStoredForm = (stored: string): string => decodeURIComponent(stored.replaceAll("/", ""))

/**
 * Where the objects of keys whose stored form does not fit the store's key limit beside the project's prefix live,
 * named by the key's SHA-256, and where each one's key is kept (a small object holding it). A stored form never
 * starts with `~` (it is escaped), so these names meet no worker's key.
 */
const longBodies = "~long/"
const longKeys = "~keys/"

/** Where `key` is kept under `prefix`: its stored form, or for a key too long for that, a name by its hash. */
const locate = (prefix: string, key: string) => {
  const stored = `${prefix}${storedFormOf(key)}`
  if (Storage.keyProblem(stored) === undefined) return { stored, keyObject: undefined }
  const hash = createHash("sha256").update(key, "utf8").digest("hex")
  return { stored: `${prefix}${longBodies}${hash}`, keyObject: `${prefix}${longKeys}${hash}` }
}

/** UTF-8 byte order, as R2 lists. */
const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

const checkKey = (key: unknown, what = "a key"): string => {
  if (typeof key !== "string") throw new BindingFailure("invalid_key", `${what} is a string`)
  const bytes = utf8(key)
  if (bytes < 1 || bytes > maxKeyBytes) {
    throw new BindingFailure("invalid_key", `${what} is 1 to ${maxKeyBytes} UTF-8 bytes; this one is ${bytes}`)
  }
  if (!key.isWellFormed()) throw new BindingFailure("invalid_key", `${what} holds an unpaired surrogate`)
  return key
}

interface Meta {
  readonly key: string
  readonly size: number
  readonly etag: string
  readonly uploaded: string
}

const ListOptions = Schema.Struct({
  prefix: Schema.optional(Schema.String),
  cursor: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.Number)
})

class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", { message: Schema.String }) {}
class BodyFailed extends Schema.TaggedError<BodyFailed>()("BodyFailed", { message: Schema.String }) {}

/**
 * `env.storage` (decisions.md part 13): the R2 subset on the node's ObjectStore, each project under its prefix, its
 * quota enforced here (a put that would pass it stores nothing), its usage kept per project and reported to the
 * control plane (`Nodes.usage`, the in-process `POST /v1/node/usage`) a few seconds after each change.
 */
export const makeStorageBinding = (options: {
  readonly objects: Storage.ObjectStore["Service"]
  /** Sends the usage of the projects that changed; failures are retried at the next round. */
  readonly report: (items: ReadonlyArray<{ projectId: string; storageBytes: number }>) => Promise<void>
  readonly reportEveryMs: number
}) => {
  const { objects } = options
  /** Bytes under each project's prefix, from one listing at first use, then kept by every put and delete. */
  const usage = new Map<string, number>()
  const dirty = new Set<string>()
  /** One change at a time per project, so two puts never both pass the quota on the same free bytes. */
  const queues = new Map<string, Promise<unknown>>()

  /** Runs a store effect; its failures become what the worker is told. */
  const run = async <A>(effect: Effect.Effect<A, unknown>): Promise<A> => {
    const exit = await Effect.runPromiseExit(effect)
    if (Exit.isSuccess(exit)) return exit.value
    const error = Cause.squash(exit.cause)
    if (error instanceof BindingFailure) throw error
    if (error instanceof Storage.ObjectStoreError) {
      throw error.reason === "InvalidKey"
        ? new BindingFailure("invalid_key", `the key does not fit the node's store: ${error.message}`)
        : new BindingFailure("storage_unavailable", error.message)
    }
    throw error
  }

  const serially = <A>(projectId: string, task: () => Promise<A>): Promise<A> => {
    const previous = queues.get(projectId) ?? Promise.resolve()
    const next = previous.then(task, task)
    const settled = next.then(
      () => undefined,
      () => undefined
    )
    queues.set(projectId, settled)
    void settled.then(() => {
      if (queues.get(projectId) === settled) queues.delete(projectId)
    })
    return next
  }

  // The objects' bytes: the small objects that keep long keys are the node's own and count for nothing.
  const usageOf = async (projectId: string, prefix: string) => {
    const known = usage.get(projectId)
    if (known !== undefined) return known
    const total = await run(
      Stream.runFold(
        objects.list(prefix),
        () => 0,
        (sum, object) => (object.key.startsWith(`${prefix}${longKeys}`) ? sum : sum + object.bytes)
      )
    )
    usage.set(projectId, total)
    return total
  }

  /** Each project's long keys by the hash that names them, read from the store once (a failed read is not kept). */
  const longKeysOf = new Map<string, Promise<Map<string, string>>>()
  const longKeysIn = (projectId: string, prefix: string) => {
    const known = longKeysOf.get(projectId)
    if (known !== undefined) return known
    const reading = (async () => {
      const found = new Map<string, string>()
      const held = await run(Stream.runCollect(objects.list(`${prefix}${longKeys}`)))
      for (const info of held) {
        const bytes = await run(Stream.mkUint8Array(objects.get(info.key)))
        found.set(info.key.slice(prefix.length + longKeys.length), Buffer.from(bytes).toString("utf8"))
      }
      return found
    })()
    longKeysOf.set(projectId, reading)
    reading.catch(() => longKeysOf.delete(projectId))
    return reading
  }

  const changed = (projectId: string, bytes: number) => {
    usage.set(projectId, bytes)
    dirty.add(projectId)
  }

  const metaOf = (key: string, info: Storage.ObjectInfo): Meta => ({
    key,
    size: info.bytes,
    etag: info.etag,
    uploaded: info.uploaded
  })

  const head = async (binding: Storage.StorageBinding, key: string): Promise<Meta | null> => {
    const info = await run(objects.head(locate(binding.prefix, key).stored))
    return Option.isSome(info) ? metaOf(key, info.value) : null
  }

  /** Streams the request body in under the quota left; the key keeps what it held when anything fails. */
  const put = (projectId: string, binding: Storage.StorageBinding, key: string, body: Http.IncomingMessage) =>
    serially(projectId, async () => {
      const { stored, keyObject } = locate(binding.prefix, key)
      const used = await usageOf(projectId, binding.prefix)
      const previous = await run(objects.head(stored))
      const replaced = Option.isSome(previous) ? previous.value.bytes : 0
      const room = binding.quotaBytes - (used - replaced)
      const quotaMessage = `the project's storage quota of ${binding.quotaBytes} bytes would be passed (${used} used)`
      const declared = Number(body.headers["content-length"] ?? "NaN")
      if (Number.isFinite(declared) && declared > room) {
        body.resume()
        throw new BindingFailure("quota_exceeded", quotaMessage)
      }
      let counted = 0
      const source = Stream.fromAsyncIterable(
        body as AsyncIterable<Buffer>,
        (cause) => new BodyFailed({ message: String(cause) })
      ).pipe(
        Stream.mapEffect((chunk: Buffer) => {
          counted += chunk.length
          return counted > room
            ? Effect.fail(new QuotaExceeded({ message: quotaMessage }))
            : Effect.succeed(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
        })
      )
      // A long key is kept before its object is written: a listing shows an object only once both are there, and a
      // failed write of a new object takes its key away again.
      if (keyObject !== undefined && Option.isNone(previous)) {
        const known = await longKeysIn(projectId, binding.prefix)
        await run(objects.put(keyObject, Stream.succeed(new TextEncoder().encode(key))))
        known.set(keyObject.slice(binding.prefix.length + longKeys.length), key)
      }
      const info = await run(
        objects.put(stored, source).pipe(
          Effect.catchTag("QuotaExceeded", (error) => Effect.fail(new BindingFailure("quota_exceeded", error.message))),
          Effect.catchTag("BodyFailed", (error) =>
            Effect.fail(new BindingFailure("bad_request", `the value could not be read: ${error.message}`))
          )
        )
      ).catch(async (error: unknown) => {
        if (keyObject !== undefined && Option.isNone(previous)) await forgetLongKey(projectId, binding, keyObject)
        throw error
      })
      changed(projectId, used - replaced + info.bytes)
      return metaOf(key, info)
    })

  const forgetLongKey = async (projectId: string, binding: Storage.StorageBinding, keyObject: string) => {
    const known = await longKeysIn(projectId, binding.prefix)
    await run(objects.remove(keyObject))
    known.delete(keyObject.slice(binding.prefix.length + longKeys.length))
  }

  const remove = (projectId: string, binding: Storage.StorageBinding, keys: ReadonlyArray<string>) =>
    serially(projectId, async () => {
      let used = await usageOf(projectId, binding.prefix)
      for (const key of keys) {
        const { stored, keyObject } = locate(binding.prefix, key)
        const previous = await run(objects.head(stored))
        if (Option.isNone(previous)) continue
        if (await run(objects.remove(stored))) used -= previous.value.bytes
        if (keyObject !== undefined) await forgetLongKey(projectId, binding, keyObject)
      }
      changed(projectId, Math.max(0, used))
    })

  const list = async (projectId: string, binding: Storage.StorageBinding, raw: unknown) => {
    const parsed = Schema.decodeUnknownOption(ListOptions)(raw ?? {})
    if (Option.isNone(parsed)) {
      throw new BindingFailure("bad_request", "list takes { prefix?: string, cursor?: string, limit?: number }")
    }
    const { prefix = "", cursor, limit = maxBatch } = parsed.value
    if (!Number.isInteger(limit) || limit < 1 || limit > maxBatch) {
      throw new BindingFailure("bad_request", `limit is an integer from 1 to ${maxBatch}`)
    }
    if (prefix !== "") checkKey(prefix, "a prefix")
    let after: string | undefined
    if (cursor !== undefined) {
      after = Buffer.from(cursor, "base64url").toString("utf8")
      if (after === "" || Buffer.from(after, "utf8").toString("base64url") !== cursor) {
        throw new BindingFailure("bad_request", "the cursor is not one a listing answered")
      }
    }
    // Keys by their stored form (none when the listed prefix is itself too long for one), then the long keys.
    const storedPrefix = `${binding.prefix}${storedFormOf(prefix)}`
    const stored =
      Storage.prefixProblem(storedPrefix) === undefined ? await run(Stream.runCollect(objects.list(storedPrefix))) : []
    const held = Array.from(stored)
      .filter((info) => !info.key.startsWith(`${binding.prefix}~`))
      .map((info) => metaOf(keyOfStoredForm(info.key.slice(binding.prefix.length)), info))
    for (const [hash, key] of await longKeysIn(projectId, binding.prefix)) {
      if (!key.startsWith(prefix)) continue
      const info = await run(objects.head(`${binding.prefix}${longBodies}${hash}`))
      if (Option.isSome(info)) held.push(metaOf(key, info.value))
    }
    const matching = held
      .filter((meta) => meta.key.startsWith(prefix) && (after === undefined || byUtf8(meta.key, after) > 0))
      .sort((a, b) => byUtf8(a.key, b.key))
    const page = matching.slice(0, limit)
    const truncated = matching.length > limit
    return {
      objects: page,
      truncated,
      ...(truncated ? { cursor: Buffer.from(page.at(-1)!.key, "utf8").toString("base64url") } : {})
    }
  }

  /** The JSON calls: `head`, `delete`, `list` (`put` and `get` stream, through `raw`). */
  const call = async (
    projectId: string,
    binding: Storage.StorageBinding,
    method: string,
    args: ReadonlyArray<unknown>
  ): Promise<BindingAnswer> => {
    switch (method) {
      case "head":
        return { value: await head(binding, checkKey(args[0])) }
      case "delete": {
        const keys = Array.isArray(args[0]) ? args[0] : [args[0]]
        if (keys.length > maxBatch) throw new BindingFailure("bad_request", `delete takes at most ${maxBatch} keys`)
        await remove(
          projectId,
          binding,
          keys.map((key) => checkKey(key))
        )
        return { value: null }
      }
      case "list":
        return { value: await list(projectId, binding, args[0]) }
      default:
        throw new BindingFailure("bad_request", `no storage method ${method}`)
    }
  }

  /** `put` (the request body is the value) and `get` (the object's bytes are the response body). */
  const raw = async (
    projectId: string,
    binding: Storage.StorageBinding,
    method: string,
    key: unknown,
    request: Http.IncomingMessage,
    response: Http.ServerResponse
  ) => {
    const checked = checkKey(key)
    if (method === "put") {
      const meta = await put(projectId, binding, checked, request)
      response.writeHead(200, { "content-type": "application/json" })
      return response.end(JSON.stringify({ value: meta }))
    }
    if (method === "get") {
      request.resume()
      const meta = await head(binding, checked)
      if (meta === null) {
        response.writeHead(200, { "content-type": "application/json" })
        return response.end(JSON.stringify({ value: null }))
      }
      response.writeHead(200, {
        "content-type": "application/octet-stream",
        // Percent-encoded: a header carries Latin-1 only, a key any character.
        "x-hostplane-object": encodeURIComponent(JSON.stringify(meta))
      })
      const bytes = objects.get(locate(binding.prefix, checked).stored)
      await Effect.runPromise(
        Stream.runForEach(bytes, (chunk) =>
          Effect.promise(
            () =>
              new Promise<void>((resolve) => {
                if (response.write(chunk)) resolve()
                else response.once("drain", resolve)
              })
          )
        ).pipe(Effect.catch(() => Effect.sync(() => response.destroy())))
      )
      return response.end()
    }
    throw new BindingFailure("bad_request", `no storage method ${method}`)
  }

  const flush = async () => {
    if (dirty.size === 0) return
    const items = [...dirty].map((projectId) => ({ projectId, storageBytes: usage.get(projectId) ?? 0 }))
    dirty.clear()
    await options.report(items).catch(() => {
      for (const item of items) dirty.add(item.projectId)
    })
  }
  const timer = setInterval(() => void flush(), options.reportEveryMs)
  timer.unref()

  /** A revoke forgets the project's counted usage: a later grant lists the prefix again. */
  const converge = (projectId: string, binding: Node.NodeProject["bindings"]["storage"] | null) => {
    if (binding === null && !dirty.has(projectId)) {
      usage.delete(projectId)
      longKeysOf.delete(projectId)
    }
  }

  const close = async () => {
    clearInterval(timer)
    await flush()
  }

  return { call, raw, converge, close, flush }
}

/**
 * The storage binding's methods as a node serves them, each on the prefix and quota `bindingOf` gives for the call
 * (the node: the project's grant; `hostplane dev`: the folder's local store).
 */
export const servedStorage = (
  storage: ReturnType<typeof makeStorageBinding>,
  bindingOf: (call: BindingCall<"storage">) => Storage.StorageBinding
): ServedBinding<"storage"> => {
  const json = (method: string) => (call: BindingCall<"storage">, args: ReadonlyArray<unknown>) =>
    storage.call(call.projectId, bindingOf(call), method, args)
  const streamed =
    (method: string) =>
    (
      call: BindingCall<"storage">,
      query: URLSearchParams,
      request: Http.IncomingMessage,
      response: Http.ServerResponse
    ) =>
      storage.raw(call.projectId, bindingOf(call), method, query.get("key"), request, response).then(() => undefined)
  return {
    calls: { head: json("head"), delete: json("delete"), list: json("list") },
    raw: { put: streamed("put"), get: streamed("get") },
    converge: storage.converge,
    close: storage.close
  }
}

/** `env.storage`: the R2 subset on the node's object store; absent on a node without one. */
export const storageBinding = workerBinding({
  name: "storage",
  worker: "storage.js",
  make: (options) =>
    Effect.gen(function* () {
      const nodes = yield* Node.Nodes
      // `ObjectStore.off` is no store: the grant cannot be served, so the binding is absent rather than failing.
      const objects = Kernel.portOn(yield* Storage.ObjectStore)
      if (Option.isNone(objects)) return undefined
      const storage = makeStorageBinding({
        objects: objects.value,
        report: (items) => Effect.runPromise(Effect.asVoid(nodes.usage({ items }))),
        reportEveryMs: options.usageEveryMs ?? 5_000
      })
      return servedStorage(storage, (call) => call.granted())
    }),
  // Under dev the folder's objects live in the dev server's local store, under one prefix, with the linked project's
  // quota or the free plan's.
  dev: {
    declared: (manifest) => manifest.storage === true,
    unavailable: "has no local store in this dev server",
    methods: { calls: ["head", "delete", "list"], raw: ["put", "get"] },
    make: (local) => {
      if (local.objects === undefined) return undefined
      const storage = makeStorageBinding({ objects: local.objects, report: async () => {}, reportEveryMs: 60_000 })
      const value = { prefix: "dev/", quotaBytes: local.storageQuotaBytes ?? defaultDevQuotaBytes }
      return servedStorage(storage, () => value)
    }
  }
})

/** The free plan's storage quota (decisions.md part 3): what dev enforces when no linked project gives its own. */
export const defaultDevQuotaBytes = 1024 * 1024 * 1024
