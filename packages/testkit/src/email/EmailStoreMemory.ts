import { Email, Errors } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { orgRows } from "../orgs/OrgStoreMemory.ts"
import { projectRows } from "../projects/ProjectStoreMemory.ts"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

/** Keyed by project id. */
export const addressRows = memoryTable("email.addresses", () => new Map<string, Email.EmailAddressRow>())
/** Keyed by mail id. */
export const logRows = memoryTable(
  "email.log",
  () => new Map<string, { row: Email.MailLogRow; pending?: boolean; leaseUntil?: string }>()
)

/** A held row whose lease ended by `now`: its process died mid-send. */
const expired = (entry: { pending?: boolean; leaseUntil?: string }, now: string) =>
  entry.pending === true && (entry.leaseUntil === undefined || Date.parse(entry.leaseUntil) <= Date.parse(now))
/** SNS message id to type. */
export const notificationIds = memoryTable("email.notifications", () => new Map<string, string>())

/** `EmailStore` on the shared memory state. */
export const make = (store: MemoryStore): Email.EmailStore["Service"] =>
  Email.EmailStore.of({
    saveAddress: (row) =>
      Effect.flatten(
        write(store, (tables) => {
          for (const other of tables(addressRows).values()) {
            if (other.address === row.address && other.projectId !== row.projectId) {
              return Effect.fail(new Errors.EmailAddressTaken({ message: `${row.address} is held by another project` }))
            }
          }
          tables(addressRows).set(row.projectId, row)
          return Effect.void
        })
      ),
    addressOf: (projectId) => read(store, (tables) => Option.fromNullishOr(tables(addressRows).get(projectId))),
    findAddress: (address) =>
      read(store, (tables) =>
        Option.fromNullishOr([...tables(addressRows).values()].find((row) => row.address === address))
      ),
    claimNotification: (messageId, type) =>
      write(store, (tables) => {
        if (tables(notificationIds).has(messageId)) return false
        tables(notificationIds).set(messageId, type)
        return true
      }),
    insertLog: (row) =>
      write(store, (tables) => {
        tables(logRows).set(row.id, { row })
      }),
    reserveOut: (row, limit) =>
      write(store, (tables) => {
        if (tables(addressRows).get(row.projectId)?.granted !== true) return "not_granted" as const
        const since = Date.parse(limit.since)
        let sent = 0
        for (const [id, entry] of tables(logRows)) {
          if (entry.row.projectId !== row.projectId) continue
          if (expired(entry, limit.now)) {
            tables(logRows).delete(id)
            continue
          }
          if (entry.row.direction === "out" && Date.parse(entry.row.createdAt) >= since) sent += 1
        }
        if (sent >= limit.cap) return "capped" as const
        tables(logRows).set(row.id, { row, pending: true, leaseUntil: limit.leaseUntil })
        return "reserved" as const
      }),
    renewOut: (id, leaseUntil) =>
      write(store, (tables) => {
        const entry = tables(logRows).get(id)
        if (entry?.pending !== true) return false
        tables(logRows).set(id, { ...entry, leaseUntil })
        return true
      }),
    confirmOut: (row, providerMessageId) =>
      write(store, (tables) => {
        const entry = tables(logRows).get(row.id)
        if (entry !== undefined) tables(logRows).set(row.id, { row: { ...entry.row, providerMessageId } })
        else if (tables(projectRows).has(row.projectId)) {
          tables(logRows).set(row.id, { row: { ...row, providerMessageId } })
        }
      }),
    releaseOut: (id) =>
      write(store, (tables) => {
        if (tables(logRows).get(id)?.pending === true) tables(logRows).delete(id)
      }),
    releaseExpired: (now) =>
      write(store, (tables) => {
        let released = 0
        for (const [id, entry] of tables(logRows)) {
          if (expired(entry, now)) {
            tables(logRows).delete(id)
            released += 1
          }
        }
        return released
      }),
    setOutcome: (providerMessageId, outcome) =>
      write(store, (tables) => {
        let count = 0
        for (const [id, entry] of tables(logRows)) {
          if (entry.row.providerMessageId === providerMessageId && entry.row.direction === "out") {
            tables(logRows).set(id, { ...entry, row: { ...entry.row, outcome } })
            count += 1
          }
        }
        return count
      }),
    listLog: (projectId, query) =>
      read(store, (tables) =>
        [...tables(logRows).values()]
          .filter((entry) => entry.pending !== true)
          .map((entry) => entry.row)
          .filter((row) => row.projectId === projectId)
          .filter((row) => query.direction === undefined || row.direction === query.direction)
          .filter((row) => {
            const after = query.after
            if (after === undefined) return true
            const at = Date.parse(row.createdAt)
            const afterAt = Date.parse(after.createdAt)
            return at < afterAt || (at === afterAt && row.id < after.id)
          })
          .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (b.id < a.id ? -1 : b.id > a.id ? 1 : 0))
          .slice(0, query.limit)
      ),
    countSince: (projectId, since) =>
      read(store, (tables) => {
        const recent = [...tables(logRows).values()].filter(
          ({ row, pending }) =>
            pending !== true && row.projectId === projectId && Date.parse(row.createdAt) >= Date.parse(since)
        )
        return {
          sent: recent.filter(({ row }) => row.direction === "out").length,
          received: recent.filter(({ row }) => row.direction === "in").length
        }
      }),
    purgeLog: (cutoffs) =>
      write(store, (tables) => {
        let purged = 0
        for (const [id, { row }] of tables(logRows)) {
          const project = tables(projectRows).get(row.projectId)
          const plan = project === undefined ? "free" : (tables(orgRows).get(project.orgId)?.plan ?? "free")
          if (Date.parse(row.createdAt) < Date.parse(cutoffs[plan])) {
            tables(logRows).delete(id)
            purged += 1
          }
        }
        return purged
      }),
    getLog: (projectId, id) =>
      read(store, (tables) =>
        Option.filter(
          Option.map(
            Option.filter(Option.fromNullishOr(tables(logRows).get(id)), (entry) => entry.pending !== true),
            (entry) => entry.row
          ),
          (row) => row.projectId === projectId
        )
      )
  })

export const layer: Layer.Layer<Email.EmailStore, never, MemoryState> = Layer.effect(
  Email.EmailStore,
  Effect.map(MemoryState, make)
)
