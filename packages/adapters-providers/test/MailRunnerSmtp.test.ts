import { assert, describe, it } from "@effect/vitest"
import { MailTransportSmtp } from "@hostplane/adapters-providers"
import { Mail } from "@hostplane/core"
import { FakeSmtpServer } from "@hostplane/testkit"
import { Context, DateTime, Duration, Effect, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"

/** The smallest outbox that keeps the port's promises: due rows only, one claim per lease, attempts counted. */
const outboxInMemory = (): Mail.MailOutbox["Service"] => {
  const rows = new Map<string, Mail.OutboxRow>()
  const update = (id: string, f: (row: Mail.OutboxRow) => Mail.OutboxRow) =>
    Effect.sync(() => {
      const row = rows.get(id)
      if (row !== undefined) rows.set(id, f(row))
    })
  return Mail.MailOutbox.of({
    enqueue: (message, createdAt) =>
      Effect.sync(() => {
        rows.set(message.id, {
          ...message,
          state: "queued",
          attempts: 0,
          nextAttemptAt: createdAt,
          lastError: null,
          sentAt: null,
          createdAt
        })
      }),
    claim: (now, leaseUntil, limit) =>
      Effect.sync(() =>
        [...rows.values()]
          .filter((row) => row.state === "queued" && row.nextAttemptAt <= now)
          .slice(0, limit)
          .map((row) => {
            const claimed = { ...row, attempts: row.attempts + 1, nextAttemptAt: leaseUntil }
            rows.set(row.id, claimed)
            return claimed
          })
      ),
    markSent: (id, sentAt) => update(id, (row) => ({ ...row, state: "sent", sentAt })),
    markFailed: (id, error, retryAt) =>
      update(id, (row) =>
        Option.match(retryAt, {
          onNone: () => ({ ...row, state: "failed", lastError: error }),
          onSome: (at) => ({ ...row, lastError: error, nextAttemptAt: at })
        })
      ),
    cancel: (id) => update(id, (row) => (row.state === "queued" ? { ...row, state: "cancelled" } : row)),
    get: (id) => Effect.sync(() => Option.fromNullishOr(rows.get(id)))
  })
}

const start = DateTime.toEpochMillis(DateTime.makeUnsafe("2025-03-04T05:06:07Z"))
const iso = (ms: number) => DateTime.formatIso(DateTime.makeUnsafe(ms))

const message: Mail.MailMessage = {
  id: "mail_runner0001",
  from: "hostplane <no-reply@localhost>",
  to: "zoe@example.com",
  subject: "You are invited",
  text: "Open the link.\n"
}

/** The core runner over the in-test outbox and the SMTP transport pointed at a fresh fake server. */
const setup = Effect.gen(function* () {
  yield* TestClock.setTime(start)
  const smtp = yield* FakeSmtpServer.make()
  const outbox = outboxInMemory()
  const context = yield* Layer.build(
    Mail.MailRunner.make({ ...Mail.defaultMailRunnerOptions, maxAttempts: 3 }).pipe(
      Layer.provide(Layer.succeed(Mail.MailOutbox, outbox)),
      Layer.provide(MailTransportSmtp.layer({ url: Redacted.make(smtp.url) }))
    )
  )
  yield* outbox.enqueue(message, iso(start))
  const row = outbox.get(message.id).pipe(Effect.map(Option.getOrThrow))
  return { smtp, runOnce: Context.get(context, Mail.MailRunner).runOnce, row }
})

describe("MailRunner over MailTransportSmtp", () => {
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
