import { Mail } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, nextSeq, read, type Tables, write } from "./MemoryState.ts"

const update = (tables: Tables, id: string, f: (row: Mail.OutboxRow) => Mail.OutboxRow | undefined): void => {
  const existing = tables.outbox.get(id)
  if (existing === undefined) return
  const row = f(existing.row)
  if (row !== undefined) tables.outbox.set(id, { ...existing, row })
}

/** `MailOutbox` on the shared memory state; a claim leases rows by moving `nextAttemptAt` to the lease end. */
export const make = (store: MemoryStore): Mail.MailOutbox["Service"] =>
  Mail.MailOutbox.of({
    enqueue: (message, createdAt) =>
      write(store, (tables) => {
        if (tables.outbox.has(message.id)) throw new Error(`duplicate mail id ${message.id}`)
        tables.outbox.set(message.id, {
          row: {
            id: message.id,
            from: message.from,
            to: message.to,
            subject: message.subject,
            text: message.text,
            state: "queued",
            attempts: 0,
            nextAttemptAt: createdAt,
            lastError: null,
            sentAt: null,
            createdAt
          },
          seq: nextSeq(store)
        })
      }),
    claim: (now, leaseUntil, limit) =>
      write(store, (tables) =>
        [...tables.outbox.values()]
          .filter(({ row }) => row.state === "queued" && row.nextAttemptAt <= now)
          .sort((a, b) =>
            a.row.nextAttemptAt < b.row.nextAttemptAt
              ? -1
              : a.row.nextAttemptAt > b.row.nextAttemptAt
                ? 1
                : a.row.createdAt < b.row.createdAt
                  ? -1
                  : a.row.createdAt > b.row.createdAt
                    ? 1
                    : a.seq - b.seq
          )
          .slice(0, Math.max(limit, 0))
          .map((entry) => {
            const row: Mail.OutboxRow = { ...entry.row, nextAttemptAt: leaseUntil, attempts: entry.row.attempts + 1 }
            tables.outbox.set(row.id, { ...entry, row })
            return row
          })
      ),
    markSent: (id, sentAt) =>
      write(store, (tables) => update(tables, id, (row) => ({ ...row, state: "sent", sentAt }))),
    markFailed: (id, error, retryAt) =>
      write(store, (tables) =>
        update(tables, id, (row) =>
          Option.match(retryAt, {
            onNone: () => ({ ...row, state: "failed", lastError: error }),
            onSome: (at) => ({ ...row, state: "queued", lastError: error, nextAttemptAt: at })
          })
        )
      ),
    cancel: (id) =>
      write(store, (tables) =>
        update(tables, id, (row) => (row.state === "queued" ? { ...row, state: "cancelled" } : undefined))
      ),
    get: (id) => read(store, (tables) => Option.map(Option.fromNullishOr(tables.outbox.get(id)), (entry) => entry.row))
  })

export const layer: Layer.Layer<Mail.MailOutbox, never, MemoryState> = Layer.effect(
  Mail.MailOutbox,
  Effect.map(MemoryState, make)
)
