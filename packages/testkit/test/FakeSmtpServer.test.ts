import * as Net from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { FakeSmtpServer } from "@hostplane/testkit"
import { Effect, Fiber } from "effect"

/** A bare SMTP client: sends each line and collects the complete reply (the last line is `NNN text`). */
const converse = (port: number, lines: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>> =>
  Effect.promise(
    () =>
      new Promise((resolve, reject) => {
        const socket = Net.connect(port, "127.0.0.1")
        const replies: Array<string> = []
        let buffer = ""
        let next = 0
        socket.setEncoding("utf8")
        socket.on("error", reject)
        socket.on("data", (chunk: string) => {
          buffer += chunk
          const match = /(?:^|\r\n)(\d{3}) [^\r\n]*\r\n$/.exec(buffer)
          if (match === null) return
          replies.push(buffer.trimEnd())
          buffer = ""
          const line = lines[next++]
          if (line === undefined) {
            socket.end()
            resolve(replies)
          } else {
            socket.write(`${line}\r\n`)
          }
        })
      })
  )

/** The reply code of each reply, read from its last line. */
const codes = (replies: ReadonlyArray<string>) => replies.map((reply) => reply.split("\r\n").at(-1)?.slice(0, 3))

const delivery = (from: string, to: string, data: string) => [
  "EHLO client.test",
  `MAIL FROM:<${from}>`,
  `RCPT TO:<${to}>`,
  "DATA",
  `${data}\r\n.`,
  "QUIT"
]

describe("FakeSmtpServer", () => {
  it.effect("records the envelope and the dot-unstuffed data, on 127.0.0.1 with an ephemeral port", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      assert.strictEqual(server.host, "127.0.0.1")
      assert.isAbove(server.port, 0)
      assert.strictEqual(server.url, `smtp://127.0.0.1:${server.port}`)

      const replies = yield* converse(server.port, delivery("a@x.test", "b@y.test", "Subject: hi\r\n\r\n..leading dot"))
      assert.deepStrictEqual(codes(replies), ["220", "250", "250", "250", "354", "250", "221"])
      const [received] = yield* server.received
      const raw = "Subject: hi\r\n\r\n.leading dot\r\n"
      assert.deepStrictEqual(received, {
        from: "a@x.test",
        to: ["b@y.test"],
        raw,
        bytes: new TextEncoder().encode(raw),
        messageId: received!.messageId,
        user: null
      })
      // The data's reply names the id, as SES's SMTP interface does.
      assert.include(replies.join("\n"), `250 Ok ${received!.messageId}`)
    })
  )

  it.effect("failNext answers the next N deliveries with the chosen code, then accepts again", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      yield* server.failNext(2, { code: 451, message: "Try later" })
      const data = "Subject: x\r\n\r\nbody"
      const first = yield* converse(server.port, delivery("a@x.test", "b@y.test", data))
      const second = yield* converse(server.port, delivery("a@x.test", "b@y.test", data))
      const third = yield* converse(server.port, delivery("a@x.test", "b@y.test", data))
      assert.strictEqual(codes(first)[5], "451")
      assert.include(first[5] ?? "", "Try later")
      assert.strictEqual(codes(second)[5], "451")
      assert.strictEqual(codes(third)[5], "250")
      assert.lengthOf(yield* server.received, 1)
    })
  )

  it.live("holdNext keeps the reply to the data until releaseHeld: the client waits, then gets its 250", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      yield* server.holdNext(1)
      const waiting = yield* Effect.forkChild(
        converse(server.port, delivery("a@x.test", "b@y.test", "Subject: slow\r\n\r\nbody"))
      )
      while ((yield* server.held).length === 0) yield* Effect.sleep("10 millis")
      assert.strictEqual((yield* server.held)[0]!.raw, "Subject: slow\r\n\r\nbody\r\n")
      assert.lengthOf(yield* server.received, 0)
      yield* server.releaseHeld
      const replies = yield* Fiber.join(waiting)
      assert.strictEqual(codes(replies)[5], "250")
      assert.lengthOf(yield* server.held, 0)
      assert.lengthOf(yield* server.received, 1)
      // Only the next one was held.
      const next = yield* converse(server.port, delivery("a@x.test", "b@y.test", "Subject: x\r\n\r\nbody"))
      assert.strictEqual(codes(next)[5], "250")
    })
  )

  it.effect("a failure can answer RCPT TO instead, as a 550 for an unknown recipient would", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make()
      yield* server.failNext(1, { code: 550, stage: "rcpt" })
      const replies = yield* converse(server.port, [
        "EHLO client.test",
        "MAIL FROM:<a@x.test>",
        "RCPT TO:<b@y.test>",
        "QUIT"
      ])
      assert.deepStrictEqual(codes(replies), ["220", "250", "250", "550", "221"])
    })
  )

  it.effect("with credentials it demands AUTH and records the user", () =>
    Effect.gen(function* () {
      const server = yield* FakeSmtpServer.make({ auth: { user: "mailer", pass: "p@ss" } })
      assert.strictEqual(server.url, `smtp://mailer:p%40ss@127.0.0.1:${server.port}`)
      const refused = yield* converse(server.port, ["EHLO client.test", "MAIL FROM:<a@x.test>", "QUIT"])
      assert.strictEqual(codes(refused)[2], "530")

      const wrong = Buffer.from("\u0000mailer\u0000nope").toString("base64")
      const right = Buffer.from("\u0000mailer\u0000p@ss").toString("base64")
      const denied = yield* converse(server.port, ["EHLO client.test", `AUTH PLAIN ${wrong}`, "QUIT"])
      assert.strictEqual(codes(denied)[2], "535")
      const replies = yield* converse(server.port, [
        "EHLO client.test",
        `AUTH PLAIN ${right}`,
        ...delivery("a@x.test", "b@y.test", "Subject: x\r\n\r\nbody").slice(1)
      ])
      assert.strictEqual(codes(replies)[2], "235")
      assert.strictEqual((yield* server.received)[0]?.user, "mailer")
    })
  )

  it.effect("stops listening when its scope closes", () =>
    Effect.gen(function* () {
      const port = yield* Effect.scoped(Effect.map(FakeSmtpServer.make(), (server) => server.port))
      const refused = yield* Effect.promise(
        () =>
          new Promise<boolean>((resolve) => {
            const socket = Net.connect(port, "127.0.0.1")
            socket.on("connect", () => {
              socket.destroy()
              resolve(false)
            })
            socket.on("error", () => resolve(true))
          })
      )
      assert.isTrue(refused)
    })
  )
})
