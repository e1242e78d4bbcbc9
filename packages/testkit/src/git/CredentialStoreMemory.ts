import { Errors, Git } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, memoryTable, type MemoryStore, read, write } from "../memory/MemoryState.ts"

export const accessTokenRows = memoryTable("git.accessTokens", () => new Map<string, Git.AccessTokenRow>())
export const sshKeyRows = memoryTable("git.sshKeys", () => new Map<string, Git.SshKeyRow>())

const byCreation = (a: { createdAt: string; id: string }, b: { createdAt: string; id: string }) =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/** `CredentialStore` on the shared memory state. */
export const make = (store: MemoryStore): Git.CredentialStore["Service"] =>
  Git.CredentialStore.of({
    listTokens: (userId) =>
      read(store, (tables) =>
        [...tables(accessTokenRows).values()].filter((row) => row.userId === userId).sort(byCreation)
      ),
    insertToken: (row) => write(store, (tables) => void tables(accessTokenRows).set(row.id, row)),
    findTokenByHash: (hash) =>
      read(store, (tables) =>
        Option.fromNullishOr([...tables(accessTokenRows).values()].find((row) => row.tokenHash === hash))
      ),
    revokeToken: (userId, id, at) =>
      write(store, (tables) => {
        const row = tables(accessTokenRows).get(id)
        if (row === undefined || row.userId !== userId) return false
        if (row.revokedAt === null) tables(accessTokenRows).set(id, { ...row, revokedAt: at })
        return true
      }),
    touchToken: (id, at, staleBefore) =>
      write(store, (tables) => {
        const row = tables(accessTokenRows).get(id)
        if (row !== undefined && (row.lastUsedAt === null || row.lastUsedAt <= staleBefore)) {
          tables(accessTokenRows).set(id, { ...row, lastUsedAt: at })
        }
      }),
    listKeys: (userId) =>
      read(store, (tables) => [...tables(sshKeyRows).values()].filter((row) => row.userId === userId).sort(byCreation)),
    insertKey: (row) =>
      Effect.flatMap(
        write(store, (tables) => {
          if ([...tables(sshKeyRows).values()].some((key) => key.fingerprint === row.fingerprint)) return false
          tables(sshKeyRows).set(row.id, row)
          return true
        }),
        (inserted) =>
          inserted ? Effect.void : Effect.fail(new Errors.SshKeyExists({ message: "this key is already registered" }))
      ),
    findKeyByFingerprint: (fingerprint) =>
      read(store, (tables) =>
        Option.fromNullishOr([...tables(sshKeyRows).values()].find((row) => row.fingerprint === fingerprint))
      ),
    removeKey: (userId, id) =>
      write(store, (tables) => {
        const row = tables(sshKeyRows).get(id)
        if (row === undefined || row.userId !== userId) return false
        return tables(sshKeyRows).delete(id)
      })
  })

export const layer: Layer.Layer<Git.CredentialStore, never, MemoryState> = Layer.effect(
  Git.CredentialStore,
  Effect.map(MemoryState, make)
)
