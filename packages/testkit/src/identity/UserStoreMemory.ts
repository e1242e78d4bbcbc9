import { Identity } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { membershipsIn } from "../orgs/OrgStoreMemory.ts"
import { MemoryState, memoryTable, type MemoryStore, read, type Tables, write } from "../memory/MemoryState.ts"

export interface UserRecord {
  readonly user: Identity.User
  readonly createdAt: string
}

export const userRows = memoryTable("identity.users", () => new Map<string, UserRecord>())
export const sessionRows = memoryTable("identity.sessions", () => new Map<string, Identity.SessionRow>())
export const oauthStateRows = memoryTable("identity.oauthStates", () => new Map<string, Identity.OAuthStateRow>())

const byIdentity = (tables: Tables, provider: string, subject: string): Option.Option<Identity.User> => {
  for (const record of tables(userRows).values()) {
    if (record.user.provider === provider && record.user.subject === subject) return Option.some(record.user)
  }
  return Option.none()
}

/** `UserStore` on the shared memory state; a user is unique by provider plus subject, as in PostgreSQL. */
export const make = (store: MemoryStore): Identity.UserStore["Service"] =>
  Identity.UserStore.of({
    findByIdentity: (provider, subject) => read(store, (tables) => byIdentity(tables, provider, subject)),
    findById: (userId) =>
      read(store, (tables) => Option.map(Option.fromNullishOr(tables(userRows).get(userId)), (r) => r.user)),
    insert: (user, createdAt) =>
      write(store, (tables) => {
        const existing = byIdentity(tables, user.provider, user.subject)
        if (Option.isSome(existing)) return { user: existing.value, created: false }
        if (tables(userRows).has(user.id)) throw new Error(`duplicate user id ${user.id}`)
        const row: Identity.User = {
          id: user.id,
          provider: user.provider,
          subject: user.subject,
          email: user.email,
          name: user.name
        }
        tables(userRows).set(user.id, { user: row, createdAt })
        return { user: row, created: true }
      }),
    updateProfile: (userId, profile) =>
      write(store, (tables) => {
        const record = tables(userRows).get(userId)
        if (record !== undefined) {
          tables(userRows).set(userId, {
            ...record,
            user: { ...record.user, email: profile.email, name: profile.name }
          })
        }
      }),
    insertSession: (session) =>
      write(store, (tables) => {
        if (tables(sessionRows).has(session.tokenHash)) throw new Error("duplicate session token hash")
        tables(sessionRows).set(session.tokenHash, { ...session })
      }),
    findSession: (tokenHash, now) =>
      read(store, (tables) => {
        const session = tables(sessionRows).get(tokenHash)
        if (session === undefined || !(session.expiresAt > now)) return Option.none()
        return Option.map(Option.fromNullishOr(tables(userRows).get(session.userId)), (r) => r.user)
      }),
    findPrincipal: (tokenHash, now) =>
      read(store, (tables) => {
        const session = tables(sessionRows).get(tokenHash)
        if (session === undefined || !(session.expiresAt > now)) return Option.none()
        const record = tables(userRows).get(session.userId)
        if (record === undefined) return Option.none()
        return Option.some({
          user: record.user,
          expiresAt: session.expiresAt,
          memberships: membershipsIn(tables, session.userId)
        })
      }),
    insertOAuthState: (state) =>
      write(store, (tables) => {
        if (tables(oauthStateRows).has(state.stateHash)) throw new Error("duplicate OAuth state hash")
        tables(oauthStateRows).set(state.stateHash, { ...state })
      }),
    takeOAuthState: (stateHash) =>
      write(store, (tables) => {
        const state = tables(oauthStateRows).get(stateHash)
        if (state === undefined) return Option.none()
        tables(oauthStateRows).delete(stateHash)
        return Option.some(state)
      })
  })

export const layer: Layer.Layer<Identity.UserStore, never, MemoryState> = Layer.effect(
  Identity.UserStore,
  Effect.map(MemoryState, make)
)
