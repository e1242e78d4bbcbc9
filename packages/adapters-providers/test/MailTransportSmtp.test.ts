import * as Net from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { MailTransportSmtp } from "@hostplane/adapters-providers"
import type { Mail } from "@hostplane/core"
import { FakeSmtpServer } from "@hostplane/testkit"
import { ConfigProvider, DateTime, Effect, Logger, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { readEml } from "./EmlReader.ts"

const message: Mail.MailMessage = {
  id: "mail_smtp0001",
  from: "hostplane <no-reply@mail.example.com>",
  to: "zoe@example.com",
  subject: "Einladung für Zoë",
  text: "Hello Zoë,\nopen http://localhost:8080/invites/tok_123 to join.\n"
}

const transportFor = (url: string) => MailTransportSmtp.make({ url: Redacted.make(url) })

/** A TCP server that accepts connections and never says a word. */
const silentServer = Effect.acquireRelease(
  Effect.callback<{ readonly server: Net.Server; readonly sockets: Set<Net.Socket> }>((resume) => {
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((socket) => sockets.add(socket))
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, sockets })))
  }),
  ({ server, sockets }) =>
    Effect.callback<void>((resume) => {
      server.close(() => resume(Effect.void))
      for (const socket of sockets) socket.destroy()
    })
).pipe(Effect.map(({ server }) => (server.address() as Net.AddressInfo).port))

/** A port that had a server a moment ago and has none now. */
const closedPort = Effect.scoped(Effect.map(FakeSmtpServer.make(), (server) => server.port))

const collectLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make((options) => {
    lines.push(JSON.stringify(options.message))
  })
  return { lines, layer: Logger.layer([logger]) }
}

describe("MailTransportSmtp", () => {
  it.effect("delivers over loopback SMTP with AUTH: envelope, headers and body arrive intact", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(DateTime.toEpochMillis(DateTime.makeUnsafe("2025-03-04T05:06:07Z")))
      const server = yield* FakeSmtpServer.make({ auth: { user: "mailer", pass: "s3cret-pass" } })
      const transport = yield* transportFor(server.url)
      yield* transport.send(message)

      const [received] = yield* server.received
      assert.isDefined(received)
      assert.strictEqual(received.from, "no-reply@mail.example.com")
      assert.deepStrictEqual(received.to, ["zoe@example.com"])
      assert.strictEqual(received.user, "mailer")
      const eml = readEml(received.raw)
      assert.strictEqual(eml.decoded("subject"), message.subject)
      assert.strictEqual(eml.headers.get("message-id"), "<mail_smtp0001@mail.example.com>")
      assert.strictEqual(eml.headers.get("date"), "Tue, 04 Mar 2025 05:06:07 +0000")
      assert.strictEqual(eml.headers.get("content-transfer-encoding"), "quoted-printable")
      assert.isFalse(eml.headers.has("x-mailer"))
      assert.strictEqual(eml.body.replace(/\r\n/g, "\n"), message.text)
    })
  )

  it.effect("sendRaw hands the message on byte for byte and answers the id of SES's `250 Ok <id>` reply", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      const transport = yield* transportFor(server.url)
      const raw = new Uint8Array([
        ...new TextEncoder().encode(
          "From: App <site.acme@mail.example.com>\r\nTo: a@example.com, b@example.com\r\nMessage-ID: <m1@x>\r\n" +
            "Subject: caf\u00e9\r\n\r\n.leading dot\r\n"
        ),
        0xe9,
        0x0d,
        0x0a
      ])
      const id = yield* transport.sendRaw({
        id: "mail_raw0001",
        from: "site.acme@mail.example.com",
        to: ["a@example.com", "b@example.com"],
        raw,
        messageId: "m1@x"
      })
      const [received] = yield* server.received
      assert.isDefined(received)
      assert.strictEqual(id, received.messageId)
      assert.match(id, /^[0-9a-f]{16}-[0-9a-f-]{36}-000000$/)
      assert.strictEqual(received.from, "site.acme@mail.example.com")
      assert.deepStrictEqual(received.to, ["a@example.com", "b@example.com"])
      assert.deepStrictEqual(received.bytes, raw)
    })
  )

  it("replyId reads SES's and Postfix's replies; a reply without an id is null", () => {
    assert.strictEqual(MailTransportSmtp.replyId("250 Ok 0100018c-abc-000000"), "0100018c-abc-000000")
    assert.strictEqual(MailTransportSmtp.replyId("250 2.0.0 Ok: queued as 4F1A2B3C"), "4F1A2B3C")
    assert.strictEqual(MailTransportSmtp.replyId("250 OK: queued as <id@host>"), "id@host")
    assert.isNull(MailTransportSmtp.replyId("250 OK"))
    assert.isNull(MailTransportSmtp.replyId("550 Ok nope"))
  })

  it.effect("sendRaw falls back on the Message-ID when the reply names no id; a 550 is permanent", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      const transport = yield* transportFor(server.url)
      const message = {
        id: "mail_raw0002",
        from: "a@example.com",
        to: ["b@example.com"],
        raw: new TextEncoder().encode("From: a@example.com\r\n\r\nx\r\n"),
        messageId: null
      }
      yield* server.failNext(1, { code: 550, message: "Message rejected: Email address is not verified" })
      const error = yield* Effect.flip(transport.sendRaw(message))
      assert.isFalse(error.retryable)
      assert.include(error.message, "550")
      assert.match(yield* transport.sendRaw(message), /-000000$/)
    })
  )

  it.effect("a 451 reply is a retryable failure, and the next attempt is delivered", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      const transport = yield* transportFor(server.url)
      yield* server.failNext(1, { code: 451, message: "Greylisted, try again later" })

      const error = yield* Effect.flip(transport.send(message))
      assert.strictEqual(error._tag, "MailSendError")
      assert.isTrue(error.retryable)
      assert.include(error.message, "451")
      assert.lengthOf(yield* server.received, 0)

      yield* transport.send(message)
      assert.lengthOf(yield* server.received, 1)
    })
  )

  it.effect("a 550 reply to the recipient is a permanent failure", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      const transport = yield* transportFor(server.url)
      yield* server.failNext(1, { code: 550, message: "No such user", stage: "rcpt" })
      const error = yield* Effect.flip(transport.send(message))
      assert.isFalse(error.retryable)
      assert.include(error.message, "550")
    })
  )

  it.effect("a 550 reply after the message data is a permanent failure", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      const transport = yield* transportFor(server.url)
      yield* server.failNext(1, { code: 550, message: "Message rejected as spam" })
      const error = yield* Effect.flip(transport.send(message))
      assert.isFalse(error.retryable)
      assert.lengthOf(yield* server.received, 0)
    })
  )

  it.effect("a 421 reply to MAIL FROM is retryable", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      const transport = yield* transportFor(server.url)
      yield* server.failNext(1, { code: 421, stage: "mail" })
      const error = yield* Effect.flip(transport.send(message))
      assert.isTrue(error.retryable)
    })
  )

  it.effect("a server that is down is a retryable failure", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const transport = yield* transportFor(`smtp://127.0.0.1:${port}`)
      const error = yield* Effect.flip(transport.send(message))
      assert.isTrue(error.retryable)
      assert.match(error.message, /ECONNREFUSED|ECONNECTION|ESOCKET/)
    })
  )

  it.effect("a server that never greets times out as a retryable failure", () =>
    Effect.gen(function* () {
      const port = yield* silentServer
      const transport = yield* MailTransportSmtp.make({
        url: Redacted.make(`smtp://127.0.0.1:${port}`),
        connectTimeout: "200 millis"
      })
      const error = yield* Effect.flip(transport.send(message))
      assert.isTrue(error.retryable)
      assert.include(error.message, "ETIMEDOUT")
    })
  )

  it.effect("rejected credentials are retryable and the password shows in no error and no log line", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make({ auth: { user: "mailer", pass: "right-pass" } })
      const url = `smtp://mailer:Wr0ng%2Fpa55@127.0.0.1:${server.port}`
      const logs = collectLogs()
      const error = yield* Effect.gen(function* () {
        const transport = yield* transportFor(url)
        return yield* Effect.flip(transport.send(message))
      }).pipe(Effect.provide(logs.layer))

      assert.isTrue(error.retryable)
      assert.include(error.message, "EAUTH")
      assert.include(logs.lines.join("\n"), `smtp://mailer@127.0.0.1:${server.port}`)
      for (const text of [error.message, String(error), ...logs.lines]) {
        assert.notInclude(text, "Wr0ng")
      }
    })
  )

  it.effect("an SERVICE_SMTP_URL that is not smtp:// or smtps:// fails the layer without echoing it", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Effect.scoped(MailTransportSmtp.urlConfig.pipe(Effect.flatMap((url) => MailTransportSmtp.make({ url })))).pipe(
          Effect.provide(
            ConfigProvider.layer(
              ConfigProvider.fromEnv({ env: { SERVICE_SMTP_URL: "https://user:hunter2@mail.example.com" } })
            )
          )
        )
      )
      assert.strictEqual(error._tag, "ConfigError")
      assert.include(error.message, "SERVICE_SMTP_URL")
      assert.notInclude(error.message, "hunter2")
    })
  )

  it.effect("endpoint shows scheme, user, host and port but not the password", () =>
    Effect.gen(function* () {
      const plain = yield* MailTransportSmtp.endpoint(Redacted.make("smtp://user%40corp:p%40ss@mail.example.com"))
      assert.deepStrictEqual(plain, {
        secure: false,
        host: "mail.example.com",
        port: 587,
        user: "user@corp",
        display: "smtp://user%40corp@mail.example.com:587"
      })
      const tls = yield* MailTransportSmtp.endpoint(Redacted.make("smtps://mail.example.com"))
      assert.strictEqual(tls.display, "smtps://mail.example.com:465")
    })
  )
})
