import { Mail } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import {
  MemoryState,
  memoryTable,
  type MemoryStore,
  nextSeq,
  read,
  type Sequenced,
  type Tables,
  write
} from "../memory/MemoryState.ts"

export const outboxRows = memoryTable("mail.outbox", () => new Map<string, Sequenced<Mail.OutboxRow>>())

const update = (tables: Tables, id: string, f: (row: Mail.OutboxRow) => Mail.OutboxRow | undefined): void => {
  const existing = tables(outboxRows).get(id)
  if (existing === undefined) return
  const row = f(existing.row)
  if (row !== undefined) tables(outboxRows).set(id, { ...existing, row })
}

/** `MailOutbox` on the shared memory state. */
export const make = (store: MemoryStore): Mail.MailOutbox["Service"] =>
  Mail.MailOutbox.of({
    enqueue: (message, createdAt) =>
      write(store, (tables) => {
        if (tables(outboxRows).has(message.id)) throw new Error(`duplicate mail id ${message.id}`)
        tables(outboxRows).set(message.id, {
          row: {
            id: message.id,
            from: message.from,
            to: message.to,
            subject: message.subject,
            text: message.text,
            state: "queued",
            lastError: null,
            sentAt: null,
            createdAt
          },
          seq: nextSeq(store)
        })
      }),
    markSent: (id, sentAt) =>
      write(store, (tables) =>
        update(tables, id, (row) => (row.state === "sent" ? undefined : { ...row, state: "sent", sentAt }))
      ),
    recordFailure: (id, error) =>
      write(store, (tables) =>
        update(tables, id, (row) => (row.state === "queued" ? { ...row, lastError: error } : undefined))
      ),
    markFailed: (id, error) =>
      write(store, (tables) =>
        update(tables, id, (row) =>
          row.state === "queued" ? { ...row, state: "failed", lastError: error } : undefined
        )
      ),
    cancel: (id) =>
      write(store, (tables) =>
        update(tables, id, (row) => (row.state === "queued" ? { ...row, state: "cancelled" } : undefined))
      ),
    get: (id) =>
      read(store, (tables) => Option.map(Option.fromNullishOr(tables(outboxRows).get(id)), (entry) => entry.row))
  })

export const layer: Layer.Layer<Mail.MailOutbox, never, MemoryState> = Layer.effect(
  Mail.MailOutbox,
  Effect.map(MemoryState, make)
)
