import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes, randomUUID } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { Secrets } from "@hostplane/core"
import { Config, ConfigProvider, Effect, Layer, Option, Predicate, Redacted, Result } from "effect"
import { inDataDir } from "../DataDir.ts"

/** One key of the ring: 32 raw bytes (AES-256) under an id stored beside every value it seals. */
export interface SealKey {
  readonly id: string
  readonly key: Uint8Array
}

export interface Options {
  /** Every key that may have sealed a stored value; ids are unique. */
  readonly keys: ReadonlyArray<SealKey>
  /** The key new values are sealed with; must be in `keys`. */
  readonly activeKeyId: string
}

const algorithm = "aes-256-gcm"
const keyBytes = 32
const nonceBytes = 12
const tagBytes = 16

/** Key ids: short and printable, as they are stored with every sealed value. */
const keyIdPattern = /^[A-Za-z0-9_.-]{1,64}$/

/** Exactly 32 bytes of standard or URL-safe base64, padding optional. */
const keyPattern = /^[A-Za-z0-9+/_-]{43}=?$/

/** Standard base64 with padding, the form `seal` writes. */
const ciphertextPattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

const configError = (message: string, cause?: unknown) =>
  new Config.ConfigError(new ConfigProvider.SourceError(cause === undefined ? { message } : { message, cause }))

interface Ring {
  readonly active: { readonly id: string; readonly key: KeyObject }
  readonly keys: ReadonlyMap<string, KeyObject>
}

const ringOf = (options: Options): Result.Result<Ring, string> => {
  const keys = new Map<string, KeyObject>()
  for (const [index, entry] of options.keys.entries()) {
    if (!keyIdPattern.test(entry.id)) return Result.fail(`seal key ${index + 1}: the id must match ${keyIdPattern}`)
    if (keys.has(entry.id)) return Result.fail(`seal key id "${entry.id}" appears twice`)
    if (entry.key.byteLength !== keyBytes) return Result.fail(`seal key "${entry.id}" must be ${keyBytes} bytes`)
    keys.set(entry.id, createSecretKey(Buffer.from(entry.key)))
  }
  const active = keys.get(options.activeKeyId)
  if (active === undefined) return Result.fail(`the active seal key "${options.activeKeyId}" is not in the key ring`)
  return Result.succeed({ active: { id: options.activeKeyId, key: active }, keys })
}

const makeRing = (ring: Ring): Secrets.Sealer["Service"] => {
  const seal = (plaintext: string, context: string) =>
    Effect.sync((): Secrets.Sealed => {
      const nonce = randomBytes(nonceBytes)
      const cipher = createCipheriv(algorithm, ring.active.key, nonce, { authTagLength: tagBytes })
      cipher.setAAD(Buffer.from(context, "utf8"))
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return {
        keyId: ring.active.id,
        ciphertext: Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64")
      }
    })

  const open = (sealed: Secrets.Sealed, context: string): Effect.Effect<string, Secrets.SealError> =>
    Effect.suspend(() => {
      const { keyId } = sealed
      const key = ring.keys.get(keyId)
      if (key === undefined) {
        return Effect.fail(
          new Secrets.SealError({
            reason: "unknown_key",
            keyId,
            message: "the value was sealed by a key not in the ring"
          })
        )
      }
      const bytes = ciphertextPattern.test(sealed.ciphertext) ? Buffer.from(sealed.ciphertext, "base64") : undefined
      if (bytes === undefined || bytes.length < nonceBytes + tagBytes) {
        return Effect.fail(
          new Secrets.SealError({ reason: "malformed", keyId, message: "the sealed value is not nonce, body and tag" })
        )
      }
      return Effect.try({
        try: () => {
          const decipher = createDecipheriv(algorithm, key, bytes.subarray(0, nonceBytes), { authTagLength: tagBytes })
          decipher.setAAD(Buffer.from(context, "utf8"))
          decipher.setAuthTag(bytes.subarray(bytes.length - tagBytes))
          const body = bytes.subarray(nonceBytes, bytes.length - tagBytes)
          return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8")
        },
        catch: () =>
          new Secrets.SealError({
            reason: "authentication_failed",
            keyId,
            message: "the sealed value does not authenticate under its key and context"
          })
      })
    })

  return Secrets.Sealer.of({ activeKeyId: ring.active.id, seal, open })
}

/**
 * The AES-256-GCM sealer over a key ring: a fresh random 96-bit nonce per value, the context as additional
 * authenticated data. Fails with a `ConfigError` (naming no key material) when the ring is unusable.
 */
export const make = (options: Options): Effect.Effect<Secrets.Sealer["Service"], Config.ConfigError> =>
  Result.match(ringOf(options), {
    onFailure: (message) => Effect.fail(configError(message)),
    onSuccess: (ring) => Effect.succeed(makeRing(ring))
  })

/** `make` as a layer, for a host that holds its keys itself. */
export const layer = (options: Options): Layer.Layer<Secrets.Sealer, Config.ConfigError> =>
  Layer.effect(Secrets.Sealer, make(options))

/** A ring of one fresh random key that lives as long as the layer: for tests, never for stored data. */
export const layerEphemeral: Layer.Layer<Secrets.Sealer> = Layer.sync(Secrets.Sealer, () => {
  const key = createSecretKey(randomBytes(keyBytes))
  return makeRing({ active: { id: "ephemeral", key }, keys: new Map([["ephemeral", key]]) })
})

/**
 * Reads a key ring written as `SERVICE_SEAL_KEY` is: a comma list of `<keyId>:<base64 of 32 bytes>`, the first one
 * active, or a single bare base64 key, which gets the id `k1`. Messages name key ids and positions, never key bytes.
 */
export const parseKeyRing = (text: string): Result.Result<Options, string> => {
  const entries = text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
  if (entries.length === 0) return Result.fail("the seal key ring is empty")
  const keys: Array<SealKey> = []
  for (const [index, entry] of entries.entries()) {
    const colon = entry.indexOf(":")
    if (colon === -1 && entries.length > 1) {
      return Result.fail(`seal key ${index + 1} has no "<keyId>:" prefix; only a single key may be bare`)
    }
    const id = colon === -1 ? "k1" : entry.slice(0, colon).trim()
    const encoded = colon === -1 ? entry : entry.slice(colon + 1).trim()
    if (!keyPattern.test(encoded)) {
      return Result.fail(`seal key ${index + 1} is not the base64 of ${keyBytes} bytes`)
    }
    keys.push({ id, key: Buffer.from(encoded, "base64") })
  }
  const options: Options = { keys, activeKeyId: keys[0]!.id }
  return Result.map(ringOf(options), () => options)
}

/** `SERVICE_SEAL_KEY`, read as a secret so it never reaches a log; unset or blank means the key file. */
export const keyConfig: Config.Config<Option.Option<Redacted.Redacted<string>>> = Config.option(
  Config.Redacted("SERVICE_SEAL_KEY")
).pipe(Config.map(Option.filter((value) => Redacted.value(value).trim() !== "")))

/** The embedded default's key file: `<SERVICE_DATA_DIR or .hostplane>/seal.key`. */
export const keyFileConfig: Config.Config<string> = inDataDir("seal.key")

const reasonOf = (cause: unknown) => (Predicate.isError(cause) ? cause.message : String(cause))

const attempt = <A>(what: string, file: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => configError(`seal key file ${file}: ${what} failed: ${reasonOf(cause)}`, cause)
  })

const hasCode = (cause: unknown, code: string) => Predicate.hasProperty(cause, "code") && cause.code === code

/** The key file's text, or none when it does not exist yet. */
const readKeyFile = (file: string) =>
  Effect.tryPromise({
    try: () => Fs.readFile(file, "utf8").then((text) => Option.some(text)),
    catch: (cause) => cause
  }).pipe(
    Effect.catch((cause) =>
      hasCode(cause, "ENOENT")
        ? Effect.succeed(Option.none<string>())
        : Effect.fail(configError(`seal key file ${file}: read failed: ${reasonOf(cause)}`, cause))
    )
  )

/**
 * Creates the key file if it is still absent: a new random key is written and flushed to a private temporary file in
 * the same folder, then hard-linked to the final name, which fails if another process created it first. A reader
 * therefore sees no file or a whole one, and two processes starting together end up sharing one key.
 */
const createKeyFile = (file: string) => {
  const dir = Path.dirname(file)
  const temp = Path.join(dir, `.${Path.basename(file)}.${randomUUID()}.tmp`)
  const write = Effect.acquireUseRelease(
    attempt("create", temp, () => Fs.open(temp, "wx", 0o600)),
    (handle) =>
      attempt("chmod", temp, () => handle.chmod(0o600)).pipe(
        Effect.andThen(attempt("write", temp, () => handle.writeFile(`${randomBytes(keyBytes).toString("base64")}\n`))),
        Effect.andThen(attempt("flush", temp, () => handle.sync()))
      ),
    (handle) => Effect.promise(() => handle.close()).pipe(Effect.ignore)
  )
  const link = Effect.tryPromise({ try: () => Fs.link(temp, file), catch: (cause) => cause }).pipe(
    Effect.as(true),
    Effect.catch((cause) =>
      hasCode(cause, "EEXIST")
        ? Effect.succeed(false)
        : Effect.fail(configError(`seal key file ${file}: link failed: ${reasonOf(cause)}`, cause))
    )
  )
  const syncDir = Effect.acquireUseRelease(
    Effect.tryPromise(() => Fs.open(dir, "r")),
    (handle) => Effect.tryPromise(() => handle.sync()),
    (handle) => Effect.promise(() => handle.close()).pipe(Effect.ignore)
  ).pipe(Effect.ignore)
  return attempt("mkdir", dir, () => Fs.mkdir(dir, { recursive: true, mode: 0o700 })).pipe(
    Effect.andThen(write),
    Effect.andThen(link),
    Effect.tap((created) =>
      created
        ? syncDir.pipe(Effect.andThen(Effect.logInfo("seal: created a new sealing key file", { file })))
        : Effect.void
    ),
    Effect.ensuring(Effect.promise(() => Fs.rm(temp, { force: true })).pipe(Effect.ignore))
  )
}

/**
 * The ring held in the key file, created on first use (mode 0600, 32 random bytes as base64, so the same text also
 * works as `SERVICE_SEAL_KEY` with the id `k1`). An existing file is never replaced: a malformed one fails the layer.
 */
export const loadKeyFile = Effect.fn("SealerAesGcm.loadKeyFile")(function* (file: string) {
  let text = yield* readKeyFile(file)
  if (Option.isNone(text)) {
    yield* createKeyFile(file)
    text = yield* readKeyFile(file)
  }
  if (Option.isNone(text)) return yield* Effect.fail(configError(`seal key file ${file} vanished while it was created`))
  const stat = yield* attempt("stat", file, () => Fs.stat(file))
  if ((stat.mode & 0o077) !== 0) {
    yield* Effect.logWarning("seal: the sealing key file is readable by other users; run chmod 600 on it", { file })
  }
  return yield* Result.match(parseKeyRing(text.value), {
    onFailure: (message) => Effect.fail(configError(`seal key file ${file}: ${message}`)),
    onSuccess: Effect.succeed
  })
})

/**
 * The sealer of a running server: the ring in `SERVICE_SEAL_KEY` when set, otherwise the embedded default's key file
 * `<SERVICE_DATA_DIR or .hostplane>/seal.key` (decisions.md parts 2 and 5). Key bytes are never logged.
 */
export const layerConfig: Layer.Layer<Secrets.Sealer, Config.ConfigError> = Layer.unwrap(
  Effect.gen(function* () {
    const configured = yield* keyConfig
    if (Option.isSome(configured)) {
      const options = parseKeyRing(Redacted.value(configured.value))
      if (Result.isFailure(options)) return yield* Effect.fail(configError(`SERVICE_SEAL_KEY: ${options.failure}`))
      return layer(options.success)
    }
    return layer(yield* loadKeyFile(yield* keyFileConfig))
  })
)
