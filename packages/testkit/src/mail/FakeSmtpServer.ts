import { randomBytes } from "node:crypto"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer, Predicate, type Scope } from "effect"
import { SMTPServer, type SMTPServerSession } from "smtp-server"

/** One message as the server took it: the SMTP envelope and the data after DATA, dot-unstuffed, CRLF kept. */
export interface FakeSmtpMessage {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly raw: string
  /** The same data as bytes, for byte-for-byte checks. */
  readonly bytes: Uint8Array
  /** The id the server gave it in its `250 Ok <id>` reply, shaped like Amazon SES's. */
  readonly messageId: string
  /** The user that authenticated, null without AUTH. */
  readonly user: string | null
}

/** An id as Amazon SES writes it: 16 hex digits, a UUID, `-000000`. */
const sesMessageId = (): string => {
  const hex = randomBytes(24).toString("hex")
  const uuid = `${hex.slice(16, 24)}-${hex.slice(24, 28)}-${hex.slice(28, 32)}-${hex.slice(32, 36)}-${hex.slice(36, 48)}`
  return `${hex.slice(0, 16)}-${uuid}-000000`
}

/** Where an injected failure answers: `MAIL FROM`, `RCPT TO`, or the reply after the message data. */
export type FakeSmtpStage = "mail" | "rcpt" | "data"

export interface FakeSmtpFailure {
  /** SMTP reply code, such as 451 (try later) or 550 (rejected). */
  readonly code: number
  readonly message?: string
  /** Default `data`. */
  readonly stage?: FakeSmtpStage
}

export interface FakeSmtpOptions {
  /** Credentials the server demands; without them it takes mail from anyone and offers no AUTH. */
  readonly auth?: { readonly user: string; readonly pass: string }
}

/**
 * A loopback SMTP server on 127.0.0.1 with an ephemeral port, answering as Amazon SES's SMTP interface does
 * (`250 Ok <message id>`); it records every accepted message and can refuse, or hold its reply, on demand.
 */
export class FakeSmtpServer extends Context.Service<
  FakeSmtpServer,
  {
    readonly host: string
    readonly port: number
    /** `smtp://[user:pass@]127.0.0.1:<port>`. */
    readonly url: string
    readonly received: Effect.Effect<ReadonlyArray<FakeSmtpMessage>>
    /** The next `count` deliveries are answered with `failure` instead of being accepted. */
    readonly failNext: (count: number, failure: FakeSmtpFailure) => Effect.Effect<void>
    /**
     * The next `count` deliveries get no reply after their data until `releaseHeld` (a slow provider, or one the
     * client dies waiting for); what they sent is in `held` meanwhile.
     */
    readonly holdNext: (count: number) => Effect.Effect<void>
    /** Messages whose reply is held now. */
    readonly held: Effect.Effect<ReadonlyArray<FakeSmtpMessage>>
    /** Accepts every held message (a client still waiting gets its `250`). */
    readonly releaseHeld: Effect.Effect<void>
    /** Forgets received messages and pending failures. */
    readonly reset: Effect.Effect<void>
  }
>()("@hostplane/testkit/mail/FakeSmtpServer") {
  /** Starts the server; it stops, dropping open connections, when the scope closes. */
  static readonly make = (
    options: FakeSmtpOptions = {}
  ): Effect.Effect<FakeSmtpServer["Service"], never, Scope.Scope> =>
    Effect.gen(function* () {
      const received: Array<FakeSmtpMessage> = []
      const pending: Array<FakeSmtpFailure> = []
      const holding = { count: 0 }
      const held: Array<{ readonly message: FakeSmtpMessage; readonly accept: () => void }> = []

      const refuse = (stage: FakeSmtpStage): Error | null => {
        const next = pending[0]
        if (next === undefined || (next.stage ?? "data") !== stage) return null
        pending.shift()
        return Object.assign(new Error(next.message ?? (next.code >= 500 ? "Rejected" : "Try again later")), {
          responseCode: next.code
        })
      }
      const userOf = (session: SMTPServerSession): string | null =>
        Predicate.isString(session.user) ? session.user : null

      const server = new SMTPServer({
        logger: false,
        disabledCommands: options.auth === undefined ? ["STARTTLS", "AUTH"] : ["STARTTLS"],
        authOptional: options.auth === undefined,
        allowInsecureAuth: true,
        closeTimeout: 100,
        onAuth(auth, _session, callback) {
          const ok =
            options.auth !== undefined && auth.username === options.auth.user && auth.password === options.auth.pass
          if (ok) callback(null, { user: auth.username })
          else callback(Object.assign(new Error("Invalid username or password"), { responseCode: 535 }))
        },
        onMailFrom(_address, _session, callback) {
          callback(refuse("mail"))
        },
        onRcptTo(_address, _session, callback) {
          callback(refuse("rcpt"))
        },
        onData(stream, session, callback) {
          const chunks: Array<Buffer> = []
          stream.on("data", (chunk: Buffer) => chunks.push(chunk))
          stream.on("end", () => {
            const failure = refuse("data")
            if (failure !== null) return callback(failure)
            const mailFrom = session.envelope.mailFrom
            const bytes = Buffer.concat(chunks)
            const messageId = sesMessageId()
            const message: FakeSmtpMessage = {
              from: mailFrom === false ? "" : mailFrom.address,
              to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
              raw: bytes.toString("utf8"),
              bytes: new Uint8Array(bytes),
              messageId,
              user: userOf(session)
            }
            // What SES's SMTP interface answers: the id its SNS events later name as `mail.messageId`.
            const accept = () => {
              received.push(message)
              callback(null, `Ok ${messageId}`)
            }
            if (holding.count > 0) {
              holding.count -= 1
              held.push({ message, accept })
              return
            }
            accept()
          })
        }
      })

      const port = yield* Effect.acquireRelease(
        Effect.callback<number>((resume) => {
          const failed = (error: Error) => resume(Effect.die(error))
          server.server.once("error", failed)
          server.listen(0, "127.0.0.1", () => {
            server.server.off("error", failed)
            resume(Effect.succeed((server.server.address() as AddressInfo).port))
          })
        }),
        () => Effect.callback<void>((resume) => server.close(() => resume(Effect.void)))
      )

      const credentials =
        options.auth === undefined
          ? ""
          : `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@`
      return FakeSmtpServer.of({
        host: "127.0.0.1",
        port,
        url: `smtp://${credentials}127.0.0.1:${port}`,
        received: Effect.sync(() => [...received]),
        failNext: (count, failure) =>
          Effect.sync(() => {
            for (let i = 0; i < count; i++) pending.push(failure)
          }),
        holdNext: (count) =>
          Effect.sync(() => {
            holding.count += count
          }),
        held: Effect.sync(() => held.map((entry) => entry.message)),
        releaseHeld: Effect.sync(() => {
          for (const entry of held.splice(0)) entry.accept()
        }),
        reset: Effect.sync(() => {
          received.length = 0
          pending.length = 0
          holding.count = 0
          for (const entry of held.splice(0)) entry.accept()
        })
      })
    })

  static readonly layer = (options: FakeSmtpOptions = {}): Layer.Layer<FakeSmtpServer> =>
    Layer.effect(FakeSmtpServer, FakeSmtpServer.make(options))
}
