import { Identity } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"
import { MemoryState, type MemoryStore, read, type Tables, write } from "./MemoryState.ts"

const byIdentity = (tables: Tables, provider: string, subject: string): Option.Option<Identity.User> => {
  for (const record of tables.users.values()) {
    if (record.user.provider === provider && record.user.subject === subject) return Option.some(record.user)
  }
  return Option.none()
}

/** `UserStore` on the shared memory state; a user is unique by provider plus subject, as in PostgreSQL. */
export const make = (store: MemoryStore): Identity.UserStore["Service"] =>
  Identity.UserStore.of({
    findByIdentity: (provider, subject) => read(store, (tables) => byIdentity(tables, provider, subject)),
    findById: (userId) =>
      read(store, (tables) => Option.map(Option.fromNullishOr(tables.users.get(userId)), (r) => r.user)),
    insert: (user, createdAt) =>
      write(store, (tables) => {
        const existing = byIdentity(tables, user.provider, user.subject)
        if (Option.isSome(existing)) return { user: existing.value, created: false }
        if (tables.users.has(user.id)) throw new Error(`duplicate user id ${user.id}`)
        const row: Identity.User = {
          id: user.id,
          provider: user.provider,
          subject: user.subject,
          email: user.email,
          name: user.name
        }
        tables.users.set(user.id, { user: row, createdAt })
        return { user: row, created: true }
      }),
    updateProfile: (userId, profile) =>
      write(store, (tables) => {
        const record = tables.users.get(userId)
        if (record !== undefined) {
          tables.users.set(userId, { ...record, user: { ...record.user, email: profile.email, name: profile.name } })
        }
      }),
    insertSession: (session) =>
      write(store, (tables) => {
        if (tables.sessions.has(session.tokenHash)) throw new Error("duplicate session token hash")
        tables.sessions.set(session.tokenHash, { ...session })
      }),
    findSession: (tokenHash, now) =>
      read(store, (tables) => {
        const session = tables.sessions.get(tokenHash)
        if (session === undefined || !(session.expiresAt > now)) return Option.none()
        return Option.map(Option.fromNullishOr(tables.users.get(session.userId)), (r) => r.user)
      }),
    insertOAuthState: (state) =>
      write(store, (tables) => {
        if (tables.oauthStates.has(state.stateHash)) throw new Error("duplicate OAuth state hash")
        tables.oauthStates.set(state.stateHash, { ...state })
      }),
    takeOAuthState: (stateHash) =>
      write(store, (tables) => {
        const state = tables.oauthStates.get(stateHash)
        if (state === undefined) return Option.none()
        tables.oauthStates.delete(stateHash)
        return Option.some(state)
      })
  })

export const layer: Layer.Layer<Identity.UserStore, never, MemoryState> = Layer.effect(
  Identity.UserStore,
  Effect.map(MemoryState, make)
)
