import { randomUUID } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { Mail } from "@hostplane/core"
import { Clock, Config, Effect, Layer, Predicate } from "effect"
import * as Eml from "./Eml.ts"
import { inDataDir } from "../DataDir.ts"

const failure = (what: string) => (cause: unknown) =>
  new Mail.MailSendError({
    message: `outbox ${what} failed: ${Predicate.isError(cause) ? cause.message : String(cause)}`,
    retryable: true
  })

const attempt = <A>(what: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: failure(what) })

/**
 * Writes `data` to `dir/name` through a temporary file in the same folder, flushed and then renamed over the target,
 * so a reader sees the old file or the whole new one, never part of one.
 */
const writeAtomically = (dir: string, name: string, data: string | Uint8Array) => {
  const temp = Path.join(dir, `.${name}.${randomUUID()}.tmp`)
  return Effect.acquireUseRelease(
    attempt("open", () => Fs.open(temp, "wx", 0o600)),
    (file) =>
      attempt("write", () => (typeof data === "string" ? file.writeFile(data, "utf8") : file.writeFile(data))).pipe(
        Effect.andThen(attempt("flush", () => file.sync()))
      ),
    (file) => attempt("close", () => file.close()).pipe(Effect.ignore)
  ).pipe(
    Effect.andThen(attempt("rename", () => Fs.rename(temp, Path.join(dir, name)))),
    Effect.onError(() => attempt("cleanup", () => Fs.rm(temp, { force: true })).pipe(Effect.ignore))
  )
}

const unsafeId = new Mail.MailSendError({ message: "mail id is not usable as a file name", retryable: false })

/**
 * Writes each message as `<dir>/<id>.eml`; sending one id again replaces its file. A relayed message is written as
 * given, and its id is its `Message-ID` (without brackets), else the relay's id, which names the file.
 */
export const make = (dir: string): Mail.MailTransport["Service"] => {
  const folder = Path.resolve(dir)
  // The folder is made once, not before every message. A failed write makes it again and tries once more: the folder
  // may have been removed since.
  let made = false
  const mkdir = Effect.suspend(() =>
    made
      ? Effect.void
      : attempt("mkdir", () => Fs.mkdir(folder, { recursive: true, mode: 0o700 })).pipe(
          Effect.andThen(Effect.sync(() => void (made = true)))
        )
  )
  const write = (name: string, data: string | Uint8Array) =>
    mkdir.pipe(
      Effect.andThen(writeAtomically(folder, name, data)),
      Effect.catch((error) => {
        if (!made) return Effect.fail(error)
        made = false
        return mkdir.pipe(
          Effect.andThen(writeAtomically(folder, name, data)),
          Effect.mapError(() => error)
        )
      })
    )
  const send = Effect.fn("MailTransportOutboxDir.send")(function* (message: Mail.MailMessage) {
    if (!Eml.isSafeId(message.id)) return yield* unsafeId
    const now = yield* Clock.currentTimeMillis
    yield* write(`${message.id}.eml`, Eml.render(message, now))
  })
  const sendRaw = Effect.fn("MailTransportOutboxDir.sendRaw")(function* (message: Mail.RawMailMessage) {
    if (!Eml.isSafeId(message.id)) return yield* unsafeId
    yield* write(`${message.id}.eml`, message.raw)
    return message.messageId ?? message.id
  })
  return Mail.MailTransport.of({ send, sendRaw })
}

/** `make` as a layer, for a host that picks the folder itself. */
export const layer = (dir: string): Layer.Layer<Mail.MailTransport> => Layer.succeed(Mail.MailTransport, make(dir))

/** The outbox folder of decisions.md part 5: `<SERVICE_DATA_DIR or .hostplane>/outbox`. */
export const dirConfig: Config.Config<string> = inDataDir("outbox")

/** The outbox folder read from `SERVICE_DATA_DIR`; logs where mail goes at start. */
export const layerConfig: Layer.Layer<Mail.MailTransport, Config.ConfigError> = Layer.unwrap(
  Effect.gen(function* () {
    const dir = yield* dirConfig
    yield* Effect.logInfo("mail: no mail provider configured, writing .eml files", { dir })
    return layer(dir)
  })
)
