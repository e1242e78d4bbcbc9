import { Tls } from "@hostplane/core"
import { Effect, Layer, Option, PubSub } from "effect"
import { hostnameRows } from "../hostnames/HostnameStoreMemory.ts"
import { MemoryState, type MemoryStore, memoryTable, read, write } from "../memory/MemoryState.ts"

export const certificateRows = memoryTable("tls.certificates", () => new Map<string, Tls.CertificateRow>())
export const accountRows = memoryTable("tls.account", () => new Map<"account", Tls.AccountRow>())
export const challengeRows = memoryTable("tls.challenges", () => new Map<string, string>())

/** The in-process change signal of one memory state: what PostgreSQL's NOTIFY is to `CertificateStorePg`. */
const signals = new WeakMap<MemoryStore, PubSub.PubSub<string>>()
const signalOf = (store: MemoryStore) => {
  let pubsub = signals.get(store)
  if (pubsub === undefined) {
    pubsub = Effect.runSync(PubSub.unbounded<string>())
    signals.set(store, pubsub)
  }
  return pubsub
}

/** `CertificateStore` on the shared memory state; a hostname's removal is seen by `removeOrphans`. */
export const make = (store: MemoryStore): Tls.CertificateStore["Service"] => {
  const signal = signalOf(store)
  const changed = (names: ReadonlyArray<string>) =>
    Effect.forEach(names, (name) => PubSub.publish(signal, name), { discard: true })
  return Tls.CertificateStore.of({
    find: (name) => read(store, (tables) => Option.fromNullishOr(tables(certificateRows).get(name))),
    served: read(store, (tables) =>
      [...tables(certificateRows).values()].flatMap((row) =>
        row.chain !== null && row.key !== null && row.expiresAt !== null
          ? [{ name: row.name, chain: row.chain, key: row.key, expiresAt: row.expiresAt }]
          : []
      )
    ),
    due: (now, renewBy, limit) =>
      read(store, (tables) =>
        [...tables(hostnameRows).values()]
          .filter((host) => host.status === "active")
          .flatMap((host) => {
            const row = tables(certificateRows).get(host.name)
            if (row === undefined) return [{ name: host.name, since: host.verifiedAt ?? host.createdAt }]
            if (row.status === "issued" && row.retryAt === null) {
              return row.expiresAt !== null && row.expiresAt <= renewBy
                ? [{ name: host.name, since: row.expiresAt }]
                : []
            }
            return row.retryAt === null || row.retryAt <= now
              ? [{ name: host.name, since: row.retryAt ?? row.updatedAt }]
              : []
          })
          .sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : a.name < b.name ? -1 : 1))
          .slice(0, limit)
          .map((due) => due.name)
      ),
    put: (row) =>
      Effect.andThen(
        write(store, (tables) => {
          tables(certificateRows).set(row.name, row)
        }),
        changed([row.name])
      ),
    remove: (name) =>
      Effect.flatMap(
        write(store, (tables) => tables(certificateRows).delete(name)),
        (removed) => (removed ? changed([name]) : Effect.void)
      ),
    removeOrphans: Effect.tap(
      write(store, (tables) => {
        const gone = [...tables(certificateRows).keys()].filter(
          (name) => tables(hostnameRows).get(name)?.status !== "active"
        )
        for (const name of gone) tables(certificateRows).delete(name)
        return gone
      }),
      changed
    ),
    account: read(store, (tables) => Option.fromNullishOr(tables(accountRows).get("account"))),
    claimAccount: (row) =>
      write(store, (tables) => {
        const existing = tables(accountRows).get("account")
        if (existing !== undefined) return existing
        tables(accountRows).set("account", row)
        return row
      }),
    setAccountUrl: (url) =>
      write(store, (tables) => {
        const existing = tables(accountRows).get("account")
        if (existing !== undefined) tables(accountRows).set("account", { ...existing, url })
      }),
    putChallenge: (token, keyAuthorization) =>
      write(store, (tables) => {
        tables(challengeRows).set(token, keyAuthorization)
      }),
    challenge: (token) => read(store, (tables) => Option.fromNullishOr(tables(challengeRows).get(token))),
    removeChallenge: (token) =>
      write(store, (tables) => {
        tables(challengeRows).delete(token)
      }),
    watch: Effect.map(PubSub.subscribe(signal), (subscription) => ({ next: PubSub.takeAll(subscription) }))
  })
}

export const layer: Layer.Layer<Tls.CertificateStore, never, MemoryState> = Layer.effect(
  Tls.CertificateStore,
  Effect.map(Effect.service(MemoryState), make)
)
