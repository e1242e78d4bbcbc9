import { assert, layer } from "@effect/vitest"
import { Mail } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { day, iso, makeMessage, minute, randomSuffix } from "./Fixtures.ts"

interface Window {
  /** An instant `offsetMs` into this test's private stretch of time. */
  readonly t: (offsetMs: number) => string
  /** Enqueues a message created (and due) at `t(offsetMs)`; it is cancelled when the test ends. */
  readonly enqueue: (offsetMs: number) => Effect.Effect<Mail.MailMessage>
  /** Claims with a generous limit, keeping only this test's rows. */
  readonly claimOwn: (now: number, leaseUntil: number) => Effect.Effect<ReadonlyArray<Mail.OutboxRow>>
}

/**
 * Runs a test in its own random stretch of time between 1800 and 1960. Rows of other tests and of runners on a
 * shared database (real time, or a TestClock's 1970) are due later, so this test's claims never take them; every row
 * the test enqueued is cancelled at its end so later tests' claims never take it either.
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
        }),
      claimOwn: (now, leaseUntil) =>
        Effect.map(outbox.claim(t(now), t(leaseUntil), 1000), (rows) => rows.filter((row) => own.has(row.id)))
    }
    return yield* test(window).pipe(Effect.ensuring(Effect.forEach(own, (id) => outbox.cancel(id), { discard: true })))
  })

const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)

/**
 * The `MailOutbox` contract: every adapter must pass it. Tests work in private stretches of time so a database may be
 * shared, as long as no mail runner claims on it while the suite runs.
 */
export const mailOutboxSuite = <E>(name: string, store: Layer.Layer<Mail.MailOutbox, E>): void =>
  layer(store)(`${name}: MailOutbox contract`, (it) => {
    it.effect("enqueue stores a queued row, due at createdAt, with no attempts", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          const expected: Mail.OutboxRow = {
            ...message,
            state: "queued",
            attempts: 0,
            nextAttemptAt: w.t(0),
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

    it.effect("claim takes queued rows due at now, sets nextAttemptAt to leaseUntil and counts an attempt", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          const claimed = yield* w.claimOwn(10_000, 10_000 + 2 * minute)
          const expected: Mail.OutboxRow = {
            ...message,
            state: "queued",
            attempts: 1,
            nextAttemptAt: w.t(10_000 + 2 * minute),
            lastError: null,
            sentAt: null,
            createdAt: w.t(0)
          }
          assert.deepStrictEqual(claimed, [expected])
          assert.deepStrictEqual(yield* outbox.get(message.id), Option.some(expected))
        })
      )
    )

    it.effect("a row is due when nextAttemptAt <= now, not before", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const message = yield* w.enqueue(minute)
          assert.deepStrictEqual(yield* w.claimOwn(minute - 1, 3 * minute), [])
          assert.deepStrictEqual(ids(yield* w.claimOwn(minute, 3 * minute)), [message.id])
        })
      )
    )

    it.effect("a claimed row is not claimed again until its lease ends", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const message = yield* w.enqueue(0)
          assert.deepStrictEqual(ids(yield* w.claimOwn(1_000, 2 * minute)), [message.id])
          assert.deepStrictEqual(yield* w.claimOwn(minute, 3 * minute), [])
          assert.deepStrictEqual(yield* w.claimOwn(2 * minute - 1, 3 * minute), [])
          const again = yield* w.claimOwn(2 * minute, 4 * minute)
          assert.deepStrictEqual(ids(again), [message.id])
          assert.strictEqual(again[0]?.attempts, 2)
        })
      )
    )

    it.effect("claim takes at most limit rows, the earliest due first", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const second = yield* w.enqueue(1_000)
          const third = yield* w.enqueue(2_000)
          const first = yield* w.enqueue(0)
          const batch = yield* outbox.claim(w.t(3_000), w.t(3_000 + minute), 2)
          assert.deepStrictEqual(ids(batch), [first.id, second.id])
          const rest = yield* outbox.claim(w.t(3_000), w.t(3_000 + minute), 2)
          assert.deepStrictEqual(ids(rest), [third.id])
          assert.deepStrictEqual(yield* outbox.claim(w.t(3_000), w.t(3_000 + minute), 2), [])
        })
      )
    )

    it.effect("concurrent claims never hand out the same row", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const messages = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => i),
            (i) => w.enqueue(i)
          )
          const batches = yield* Effect.all(
            Array.from({ length: 4 }, () => outbox.claim(w.t(minute), w.t(10 * minute), 5)),
            { concurrency: "unbounded" }
          )
          const claimed = batches.flatMap(ids)
          assert.strictEqual(new Set(claimed).size, claimed.length)
          assert.deepStrictEqual([...claimed].sort(), ids(messages).sort())
        })
      )
    )

    it.effect("markSent ends the row as sent with sentAt; it is never claimed again", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* w.claimOwn(0, minute)
          yield* outbox.markSent(message.id, w.t(5_000))
          const row = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(row.state, "sent")
          assert.strictEqual(row.sentAt, w.t(5_000))
          assert.strictEqual(row.attempts, 1)
          assert.deepStrictEqual(yield* w.claimOwn(day, day + minute), [])
        })
      )
    )

    it.effect("markFailed with a retry time requeues the row at that time with lastError", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* w.claimOwn(0, minute)
          yield* outbox.markFailed(message.id, "421 try later", Option.some(w.t(5 * minute)))
          const row = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(row.state, "queued")
          assert.strictEqual(row.lastError, "421 try later")
          assert.strictEqual(row.nextAttemptAt, w.t(5 * minute))
          assert.strictEqual(row.attempts, 1)
          assert.strictEqual(row.sentAt, null)
          assert.deepStrictEqual(yield* w.claimOwn(5 * minute - 1, 6 * minute), [])
          const retried = yield* w.claimOwn(5 * minute, 7 * minute)
          assert.deepStrictEqual(ids(retried), [message.id])
          assert.strictEqual(retried[0]?.attempts, 2)
        })
      )
    )

    it.effect("markFailed with none ends the row as failed", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* w.claimOwn(0, minute)
          yield* outbox.markFailed(message.id, "550 no such user", Option.none())
          const row = Option.getOrThrow(yield* outbox.get(message.id))
          assert.strictEqual(row.state, "failed")
          assert.strictEqual(row.lastError, "550 no such user")
          assert.strictEqual(row.sentAt, null)
          assert.deepStrictEqual(yield* w.claimOwn(day, day + minute), [])
        })
      )
    )

    it.effect("cancel drops a queued row: it is cancelled and never claimed", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* outbox.cancel(message.id)
          assert.strictEqual(Option.getOrThrow(yield* outbox.get(message.id)).state, "cancelled")
          assert.deepStrictEqual(yield* w.claimOwn(day, day + minute), [])
        })
      )
    )

    it.effect("cancel only affects unsent rows: a sent row stays sent", () =>
      inWindow((w) =>
        Effect.gen(function* () {
          const outbox = yield* Mail.MailOutbox
          const message = yield* w.enqueue(0)
          yield* w.claimOwn(0, minute)
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
