import { assert, layer } from "@effect/vitest"
import { Mail } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { day, iso, makeMessage, randomSuffix } from "../contract/Fixtures.ts"

interface Window {
  /** An instant `offsetMs` into this test's private stretch of time. */
  readonly t: (offsetMs: number) => string
  /** Enqueues a message created (and due) at `t(offsetMs)`; it is cancelled when the test ends. */
  readonly enqueue: (offsetMs: number) => Effect.Effect<Mail.MailMessage>
}

/**
 * Runs a test in its own random stretch of time between 1800 and 1960; every row the test enqueued is cancelled at its
 * end.
 */
const inWindow = <A, E, R>(test: (window: Window) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const outbox = yield* Mail.MailOutbox
    const base = Date.UTC(1800, 0, 1) + Math.floor(Math.random() * 160 * 365) * day
    const t = (offsetMs: number) => iso(base + offsetMs)
    const own = new Set<string>()
    const window: Window = {
      t,
      enqueue: (offsetMs) =>
        Effect.gen(function* () {
          const message = makeMessage()
          own.add(message.id)
          yield* outbox.enqueue(message, t(offsetMs))
          return message
        })
    }
    return yield* test(window).pipe(Effect.ensuring(Effect.forEach(own, (id) => outbox.cancel(id), { discard: true })))
  })

/**
 * The `MailOutbox` contract: every adapter must pass it. When a row is tried is its job's business (the `JobStore`
 * contract).
 */
export const mailOutboxSuite = <E>(name: string, store: Layer.Layer<Mail.MailOutbox, E>): void =>
  layer(store)(`${name}: MailOutbox contract`, (it) => {
    it.effect("enqueue stores a queued row with no outcome yet", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          const expected: Mail.OutboxRow = {
            ...message,
            state: "queued",
            lastError: null,
            sentAt: null,
            createdAt: w.t(0)
          }
          assert.deepStrictEqual(yield* outbox.get(message.id), Option.some(expected))
        })
      )
    )

    it.effect("get of an unknown id is none", () =>
      Effect.gen(function* () {
        const outbox = yield* Mail.MailOutbox
        assert.isTrue(Option.isNone(yield* outbox.get(`mail_${randomSuffix()}`)))
      })
    )

    it.effect("markSent ends the row as sent with sentAt; a second markSent keeps the first sentAt", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* outbox.markSent(message.id, w.t(5_000))
          const row = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(row.state, "sent")
          assert.strictEqual(row.sentAt, w.t(5_000))
          yield* outbox.markSent(message.id, w.t(9_000))
          assert.strictEqual(Option.getOrThrow(yield* outbox.get(message.id)).sentAt, w.t(5_000))
        })
      )
    )

    it.effect("recordFailure keeps the row queued with lastError", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* outbox.recordFailure(message.id, "421 try later")
          const row = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(row.state, "queued")
          assert.strictEqual(row.lastError, "421 try later")
          assert.strictEqual(row.sentAt, null)
        })
      )
    )

    it.effect("markFailed ends the row as failed", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* outbox.markFailed(message.id, "550 no such user")
          const row = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(row.state, "failed")
          assert.strictEqual(row.lastError, "550 no such user")
          assert.strictEqual(row.sentAt, null)
        })
      )
    )

    it.effect("cancel drops a queued row: it is cancelled, and a failure recorded later leaves it so", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* outbox.cancel(message.id)
          assert.strictEqual(Option.getOrThrow(yield* outbox.get(message.id)).state, "cancelled")
          yield* outbox.markFailed(message.id, "late")
          assert.strictEqual(Option.getOrThrow(yield* outbox.get(message.id)).state, "cancelled")
        })
      )
    )

    it.effect("cancel only affects unsent rows: a sent row stays sent", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* outbox.markSent(message.id, w.t(1_000))
          const sent = Option.getOrThrow(yield* outbox.get(message.id))
          yield* outbox.cancel(message.id)
          assert.deepStrictEqual(yield* outbox.get(message.id), Option.some(sent))
          assert.strictEqual(sent.state, "sent")
        })
      )
    )

    it.effect("cancel of an unknown id does nothing", () =>
      Effect.gen(function* () {
        const outbox = yield* Mail.MailOutbox
        const id = `mail_${randomSuffix()}`
        yield* outbox.cancel(id)
        assert.isTrue(Option.isNone(yield* outbox.get(id)))
      })
    )
  })
