import { assert, describe, it } from "@effect/vitest"
import { MailTransportSmtp } from "@hostplane/adapters-providers"
import { Jobs, Kernel, Mail } from "@hostplane/core"
import { FakeSmtpServer, JobStoreMemory, MailOutboxMemory, MemoryState } from "@hostplane/testkit"
import { Context, DateTime, Duration, Effect, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"

const start = DateTime.toEpochMillis(DateTime.makeUnsafe("2025-03-04T05:06:07Z"))
const iso = (ms: number) => DateTime.formatIso(DateTime.makeUnsafe(ms))

const message: Mail.MailMessage = {
  id: "mail_runner0001",
  from: "hostplane <no-reply@localhost>",
  to: "zoe@example.com",
  subject: "You are invited",
  text: "Open the link.\n"
}

/** The mail job over memory stores and the SMTP transport pointed at a fresh fake server. */
const setup = Effect.gen(function* () {
  yield* TestClock.setTime(start)
  const smtp = yield* FakeSmtpServer.make()
  const context = yield* Layer.build(
    Jobs.Jobs.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(MailOutboxMemory.layer, JobStoreMemory.layer)),
      Layer.provideMerge(Layer.mergeAll(MemoryState.layer, Kernel.Tokens.layer)),
      Layer.provideMerge(MailTransportSmtp.layer({ url: Redacted.make(smtp.url) }))
    )
  )
  const queue = yield* Effect.provideContext(Mail.mailQueue, context)
  yield* queue(message, iso(start))
  const runOnce = Effect.provideContext(Jobs.JobRunner.runOnce([Mail.sendMailHandler({ maxAttempts: 3 })]), context)
  // The mail row's outcome, with the attempts and due time its job keeps.
  const row = Effect.gen(function* () {
    const mail = Option.getOrThrow(yield* Context.get(context, Mail.MailOutbox).get(message.id))
    const job = Option.getOrThrow(yield* Context.get(context, Jobs.JobStore).get(message.id))
    return { ...mail, attempts: job.attempts, nextAttemptAt: job.runAt }
  })
  return { smtp, runOnce, row }
})

describe("the mail_send job over MailTransportSmtp", () => {
  it.effect("a 451 reply reschedules the row with backoff, and a later run sends it", () =>
    Effect.gen(function* () {
      const { smtp, runOnce, row } = yield* setup
      yield* smtp.failNext(1, { code: 451 })

      assert.strictEqual(yield* runOnce, 1)
      const deferred = yield* row
      assert.strictEqual(deferred.state, "queued")
      assert.strictEqual(deferred.attempts, 1)
      assert.include(deferred.lastError ?? "", "451")
      assert.strictEqual(deferred.nextAttemptAt, iso(start + Duration.toMillis(Mail.backoff(1))))
      assert.lengthOf(yield* smtp.received, 0)

      assert.strictEqual(yield* runOnce, 0, "not due before the backoff has passed")
      yield* TestClock.adjust(Mail.backoff(1))

      assert.strictEqual(yield* runOnce, 1)
      const sent = yield* row
      assert.strictEqual(sent.state, "sent")
      assert.strictEqual(sent.attempts, 2)
      assert.strictEqual(sent.sentAt, iso(start + Duration.toMillis(Mail.backoff(1))))
      const received = yield* smtp.received
      assert.lengthOf(received, 1)
      assert.include(received[0]?.raw ?? "", "Message-ID: <mail_runner0001@localhost>")
    })
  )

  it.effect("a 550 reply ends the row as failed without another attempt", () =>
    Effect.gen(function* () {
      const { smtp, runOnce, row } = yield* setup
      yield* smtp.failNext(1, { code: 550, stage: "rcpt" })

      assert.strictEqual(yield* runOnce, 1)
      const failed = yield* row
      assert.strictEqual(failed.state, "failed")
      assert.include(failed.lastError ?? "", "550")
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(yield* runOnce, 0)
      assert.lengthOf(yield* smtp.received, 0)
    })
  )

  it.effect("a server that keeps answering 421 is retried until maxAttempts, then the row fails", () =>
    Effect.gen(function* () {
      const { smtp, runOnce, row } = yield* setup
      yield* smtp.failNext(3, { code: 421, stage: "mail" })
      for (let attempt = 1; attempt <= 3; attempt++) {
        assert.strictEqual(yield* runOnce, 1)
        yield* TestClock.adjust(Mail.backoff(attempt))
      }
      const last = yield* row
      assert.strictEqual(last.state, "failed")
      assert.strictEqual(last.attempts, 3)
    })
  )
})
