import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { MailTransportOutboxDir } from "@hostplane/adapters-providers"
import { Mail } from "@hostplane/core"
import { ConfigProvider, DateTime, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { decodeWords, readEml } from "./EmlReader.ts"
import { tempDir } from "./support/TempFiles.ts"

const readText = (file: string) => Effect.promise(() => Fs.readFile(file, "utf8"))
const listDir = (dir: string) => Effect.promise(() => Fs.readdir(dir))

const at = DateTime.toEpochMillis(DateTime.makeUnsafe("2025-03-04T05:06:07Z"))

const message: Mail.MailMessage = {
  id: "mail_0123abcd",
  from: "hostplane <no-reply@mail.example.com>",
  to: "zoe@example.com",
  subject: "You are invited to acme",
  text: "Hello,\n\nopen http://localhost:8080/invites/tok_123 to join.\n"
}

describe("MailTransportOutboxDir", () => {
  it.effect("writes <dir>/<message id>.eml with the RFC 5322 headers, CRLF line endings and the body", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(at)
      const dir = yield* tempDir("outbox")
      yield* MailTransportOutboxDir.make(dir).send(message)

      const raw = yield* readText(Path.join(dir, "mail_0123abcd.eml"))
      assert.isNull(/(?<!\r)\n/.exec(raw), "every line ends with CRLF")
      assert.isTrue(raw.endsWith("\r\n"))
      const eml = readEml(raw)
      assert.strictEqual(eml.headers.get("from"), "hostplane <no-reply@mail.example.com>")
      assert.strictEqual(eml.headers.get("to"), "zoe@example.com")
      assert.strictEqual(eml.headers.get("subject"), "You are invited to acme")
      assert.strictEqual(eml.headers.get("date"), "Tue, 04 Mar 2025 05:06:07 +0000")
      assert.strictEqual(eml.headers.get("message-id"), "<mail_0123abcd@mail.example.com>")
      assert.strictEqual(eml.headers.get("mime-version"), "1.0")
      assert.strictEqual(eml.headers.get("content-type"), "text/plain; charset=utf-8")
      assert.strictEqual(eml.headers.get("content-transfer-encoding"), "quoted-printable")
      assert.strictEqual(eml.body, message.text.replace(/\n/g, "\r\n"))
    })
  )

  it.effect("sendRaw writes <dir>/<id>.eml byte for byte and answers the Message-ID without brackets", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const transport = MailTransportOutboxDir.make(dir)
      const raw = new Uint8Array([...new TextEncoder().encode("Message-ID: <abc@x.test>\r\n\r\nhi\n"), 0xff, 0x00])
      const message = { id: "mail_raw0001", from: "a@x.test", to: ["b@y.test"], raw, messageId: "abc@x.test" }
      assert.strictEqual(yield* transport.sendRaw(message), "abc@x.test")
      const file = yield* Effect.promise(() => Fs.readFile(Path.join(dir, "mail_raw0001.eml")))
      assert.deepStrictEqual(new Uint8Array(file), raw)
      // Without a Message-ID the relay's id names the message (and the file).
      assert.strictEqual(yield* transport.sendRaw({ ...message, id: "mail_raw0002", messageId: null }), "mail_raw0002")
      const unsafe = yield* Effect.flip(transport.sendRaw({ ...message, id: "../escape" }))
      assert.isFalse(unsafe.retryable)
      assert.deepStrictEqual((yield* listDir(dir)).sort(), ["mail_raw0001.eml", "mail_raw0002.eml"])
    })
  )

  it.effect("a non-ASCII subject, sender name and body are encoded and decode back unchanged", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const subject = "Grüße aus Zürich — 你好, ✉️ ready: " + "ünïcödé ".repeat(12).trim()
      const text = "Zoë, ça va? 🎉\n" + "é".repeat(120) + "\ntrailing space \nequals = sign\n"
      yield* MailTransportOutboxDir.make(dir).send({
        ...message,
        from: "Hôst Plane <no-reply@localhost>",
        subject,
        text
      })

      const raw = yield* readText(Path.join(dir, "mail_0123abcd.eml"))
      assert.isTrue(/^[\x00-\x7f]*$/.test(raw), "the file is 7-bit ASCII")
      for (const line of raw.split("\r\n")) assert.isAtMost(line.length, 78, line)
      for (const word of raw.match(/=\?[^?]+\?[BQ]\?[^?]*\?=/g) ?? []) assert.isAtMost(word.length, 75)
      const eml = readEml(raw)
      assert.strictEqual(eml.decoded("subject"), subject)
      assert.strictEqual(eml.decoded("from"), "Hôst Plane <no-reply@localhost>")
      assert.strictEqual(eml.headers.get("message-id"), "<mail_0123abcd@localhost>")
      assert.strictEqual(eml.body, text.replace(/\n/g, "\r\n"))
    })
  )

  it.effect("a long ASCII subject is folded at spaces and unfolds back", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const subject = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ") + " =?not-an-encoded-word?="
      yield* MailTransportOutboxDir.make(dir).send({ ...message, subject })
      const raw = yield* readText(Path.join(dir, "mail_0123abcd.eml"))
      for (const line of raw.split("\r\n")) assert.isAtMost(line.length, 78, line)
      assert.strictEqual(decodeWords(readEml(raw).headers.get("subject") ?? ""), subject)
    })
  )

  it.effect("header values cannot inject headers, and a sender name with specials is quoted", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      yield* MailTransportOutboxDir.make(dir).send({
        ...message,
        from: "Acme, Inc. <no-reply@acme.test>",
        subject: "hi\r\nBcc: victim@example.com"
      })
      const eml = readEml(yield* readText(Path.join(dir, "mail_0123abcd.eml")))
      assert.isFalse(eml.headers.has("bcc"))
      assert.strictEqual(eml.headers.get("subject"), "hi Bcc: victim@example.com")
      assert.strictEqual(eml.headers.get("from"), '"Acme, Inc." <no-reply@acme.test>')
    })
  )

  it.effect("creates the folder when it is missing", () =>
    Effect.gen(function* () {
      const dir = Path.join(yield* tempDir("outbox"), "data", "outbox")
      yield* MailTransportOutboxDir.make(dir).send(message)
      assert.deepStrictEqual(yield* listDir(dir), ["mail_0123abcd.eml"])
    })
  )

  it.effect("a folder removed after the first message is made again for the next one", () =>
    Effect.gen(function* () {
      const dir = Path.join(yield* tempDir("outbox"), "outbox")
      const transport = MailTransportOutboxDir.make(dir)
      yield* transport.send(message)
      yield* Effect.promise(() => Fs.rm(dir, { recursive: true }))
      yield* transport.send({ ...message, id: "mail_second" })
      assert.deepStrictEqual(yield* listDir(dir), ["mail_second.eml"])
    })
  )

  it.effect("sending the same id twice replaces the file and leaves no temporary file behind", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const transport = MailTransportOutboxDir.make(dir)
      yield* transport.send(message)
      yield* transport.send({ ...message, subject: "second" })
      assert.deepStrictEqual(yield* listDir(dir), ["mail_0123abcd.eml"])
      const eml = readEml(yield* readText(Path.join(dir, "mail_0123abcd.eml")))
      assert.strictEqual(eml.headers.get("subject"), "second")
    })
  )

  it.effect("a reader polling the file while it is rewritten only ever sees a whole message", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const file = Path.join(dir, "mail_0123abcd.eml")
      const transport = MailTransportOutboxDir.make(dir)
      const big = (fill: string) => ({ ...message, text: `${fill.repeat(500_000)}\nend\n` })
      yield* transport.send(big("a"))
      const expected = new Set([yield* readText(file)])
      yield* transport.send(big("b"))
      expected.add(yield* readText(file))

      let stop = false
      const reader = yield* Effect.forkChild(
        Effect.promise(async () => {
          let reads = 0
          while (!stop) {
            const seen = await Fs.readFile(file, "utf8")
            if (!expected.has(seen)) throw new Error(`read a partial file of ${seen.length} characters`)
            reads++
          }
          return reads
        })
      )
      yield* Effect.forEach([..."abababababab"], (fill) => transport.send(big(fill)), { discard: true }).pipe(
        Effect.ensuring(Effect.sync(() => (stop = true)))
      )
      const reads = yield* Fiber.join(reader)
      assert.isAbove(reads, 0)
    })
  )

  it.effect("an id that is not a plain file name is refused for good and nothing is written", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const error = yield* Effect.flip(MailTransportOutboxDir.make(dir).send({ ...message, id: "../escape" }))
      assert.strictEqual(error._tag, "MailSendError")
      assert.isFalse(error.retryable)
      assert.deepStrictEqual(yield* listDir(dir), [])
    })
  )

  it.effect("a folder that cannot be written is a retryable failure", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir("outbox")
      const blocker = Path.join(dir, "not-a-folder")
      yield* Effect.promise(() => Fs.writeFile(blocker, "x"))
      const error = yield* Effect.flip(MailTransportOutboxDir.make(Path.join(blocker, "outbox")).send(message))
      assert.isTrue(error.retryable)
      assert.match(error.message, /^outbox mkdir failed/)
    })
  )

  it.effect("layerConfig writes to <SERVICE_DATA_DIR>/outbox", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir("outbox")
      yield* Effect.gen(function* () {
        const transport = yield* Mail.MailTransport
        yield* transport.send(message)
      }).pipe(
        Effect.provide(MailTransportOutboxDir.layerConfig),
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { SERVICE_DATA_DIR: dataDir } })))
      )
      assert.deepStrictEqual(yield* listDir(Path.join(dataDir, "outbox")), ["mail_0123abcd.eml"])
    })
  )

  it.effect("without SERVICE_DATA_DIR the outbox is .hostplane/outbox in the working directory", () =>
    Effect.gen(function* () {
      const dir = yield* MailTransportOutboxDir.dirConfig.pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
      )
      assert.strictEqual(dir, Path.resolve(".hostplane", "outbox"))
    })
  )
})
