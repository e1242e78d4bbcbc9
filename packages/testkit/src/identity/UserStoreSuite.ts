import { assert, layer } from "@effect/vitest"
import { Identity, Orgs } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { at, day, makeOrg, makeUser, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** The `UserStore` contract: every adapter must pass it; ids are unique per test so a database may be shared. */
export const userStoreSuite = <E>(name: string, store: Layer.Layer<Identity.UserStore | Orgs.OrgStore, E>): void =>
  layer(store)(`${name}: UserStore contract`, (it) => {
    it.effect("an inserted user is found by id and by provider plus subject", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const user = makeUser()
        const inserted = yield* users.insert(user, at(0))
        assert.deepStrictEqual(inserted, { user, created: true })
        assert.deepStrictEqual(yield* users.findById(user.id), Option.some(user))
        assert.deepStrictEqual(yield* users.findByIdentity(user.provider, user.subject), Option.some(user))
      })
    )

    it.effect("a user without email and name keeps the nulls", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const user = makeUser({ email: null, name: null })
        yield* users.insert(user, at(0))
        assert.deepStrictEqual(yield* users.findById(user.id), Option.some(user))
      })
    )

    it.effect("insert returns the existing user for the same provider and subject", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const first = makeUser()
        yield* users.insert(first, at(0))
        const second = makeUser({ provider: first.provider, subject: first.subject, email: null, name: "Other" })
        const again = yield* users.insert(second, at(minute))
        assert.deepStrictEqual(again, { user: first, created: false })
        assert.isTrue(Option.isNone(yield* users.findById(second.id)))
        assert.deepStrictEqual(yield* users.findByIdentity(first.provider, first.subject), Option.some(first))
      })
    )

    it.effect("the same subject under another provider is another user", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const first = makeUser()
        const second = makeUser({ provider: `${first.provider}-other`, subject: first.subject })
        yield* users.insert(first, at(0))
        assert.deepStrictEqual(yield* users.insert(second, at(0)), { user: second, created: true })
        assert.deepStrictEqual(yield* users.findByIdentity(second.provider, second.subject), Option.some(second))
        assert.deepStrictEqual(yield* users.findByIdentity(first.provider, first.subject), Option.some(first))
      })
    )

    it.effect("unknown users are none", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        assert.isTrue(Option.isNone(yield* users.findById(uniqueId("usr"))))
        assert.isTrue(Option.isNone(yield* users.findByIdentity("contract", `nobody-${randomSuffix()}`)))
      })
    )

    it.effect("updateProfile replaces email and name, nulls included", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const user = makeUser()
        yield* users.insert(user, at(0))
        yield* users.updateProfile(user.id, { email: "new@example.test", name: null })
        const updated = { ...user, email: "new@example.test", name: null }
        assert.deepStrictEqual(yield* users.findById(user.id), Option.some(updated))
        assert.deepStrictEqual(yield* users.findByIdentity(user.provider, user.subject), Option.some(updated))
      })
    )

    it.effect("findSession answers the session's user while expiresAt > now", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const user = makeUser()
        yield* users.insert(user, at(0))
        const tokenHash = `session-${randomSuffix()}`
        yield* users.insertSession({ tokenHash, userId: user.id, expiresAt: at(30 * day), createdAt: at(0) })
        assert.deepStrictEqual(yield* users.findSession(tokenHash, at(0)), Option.some(user))
        assert.deepStrictEqual(yield* users.findSession(tokenHash, at(30 * day - 1)), Option.some(user))
      })
    )

    it.effect("findPrincipal answers the user, the session's end and the memberships as membershipsOf lists them", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const orgs = yield* Orgs.OrgStore
        const user = makeUser()
        yield* users.insert(user, at(0))
        const tokenHash = `session-${randomSuffix()}`
        yield* users.insertSession({ tokenHash, userId: user.id, expiresAt: at(day), createdAt: at(0) })
        assert.deepStrictEqual(
          yield* users.findPrincipal(tokenHash, at(0)),
          Option.some({ user, expiresAt: at(day), memberships: [] })
        )
        const first = makeOrg()
        const second = makeOrg()
        yield* orgs.insert(first)
        yield* orgs.insert(second)
        yield* orgs.addMember(second.id, user.id, "viewer", at(minute))
        yield* orgs.addMember(first.id, user.id, "admin", at(2 * minute))
        const found = yield* users.findPrincipal(tokenHash, at(day - 1))
        assert.deepStrictEqual(
          found,
          Option.some({ user, expiresAt: at(day), memberships: yield* orgs.membershipsOf(user.id) })
        )
        assert.deepStrictEqual(
          Option.map(found, (p) => p.memberships.map((m) => [m.org.id, m.role])),
          Option.some([
            [second.id, "viewer"],
            [first.id, "admin"]
          ])
        )
        assert.isTrue(Option.isNone(yield* users.findPrincipal(tokenHash, at(day))))
        assert.isTrue(Option.isNone(yield* users.findPrincipal(`session-${randomSuffix()}`, at(0))))
      })
    )

    it.effect("findSession finds nothing once now reaches expiresAt", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const user = makeUser()
        yield* users.insert(user, at(0))
        const tokenHash = `session-${randomSuffix()}`
        yield* users.insertSession({ tokenHash, userId: user.id, expiresAt: at(day), createdAt: at(0) })
        assert.isTrue(Option.isNone(yield* users.findSession(tokenHash, at(day))))
        assert.isTrue(Option.isNone(yield* users.findSession(tokenHash, at(2 * day))))
      })
    )

    it.effect("findSession of an unknown token hash is none", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        assert.isTrue(Option.isNone(yield* users.findSession(`session-${randomSuffix()}`, at(0))))
      })
    )

    it.effect("a session sees the user's updated profile", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const user = makeUser()
        yield* users.insert(user, at(0))
        const tokenHash = `session-${randomSuffix()}`
        yield* users.insertSession({ tokenHash, userId: user.id, expiresAt: at(day), createdAt: at(0) })
        yield* users.updateProfile(user.id, { email: null, name: "Renamed" })
        assert.deepStrictEqual(
          yield* users.findSession(tokenHash, at(0)),
          Option.some({ ...user, email: null, name: "Renamed" })
        )
      })
    )

    it.effect("takeOAuthState returns the state and removes it: a second take finds nothing", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const state: Identity.OAuthStateRow = {
          stateHash: `state-${randomSuffix()}`,
          redirect: "http://localhost:8080/callback?x=1",
          codeVerifier: `verifier-${randomSuffix()}`,
          expiresAt: at(10 * minute)
        }
        yield* users.insertOAuthState(state)
        assert.deepStrictEqual(yield* users.takeOAuthState(state.stateHash), Option.some(state))
        assert.isTrue(Option.isNone(yield* users.takeOAuthState(state.stateHash)))
      })
    )

    it.effect("takeOAuthState returns an expired state too: the caller checks expiresAt", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const state: Identity.OAuthStateRow = {
          stateHash: `state-${randomSuffix()}`,
          redirect: "http://localhost:8080/",
          codeVerifier: `verifier-${randomSuffix()}`,
          expiresAt: "2001-01-01T00:00:00.000Z"
        }
        yield* users.insertOAuthState(state)
        assert.deepStrictEqual(yield* users.takeOAuthState(state.stateHash), Option.some(state))
      })
    )

    it.effect("takeOAuthState of an unknown state is none", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        assert.isTrue(Option.isNone(yield* users.takeOAuthState(`state-${randomSuffix()}`)))
      })
    )

    it.effect("concurrent takes of one state: exactly one gets it", () =>
      Effect.gen(function* () {
        const users = yield* Identity.UserStore
        const state: Identity.OAuthStateRow = {
          stateHash: `state-${randomSuffix()}`,
          redirect: "http://localhost:8080/",
          codeVerifier: `verifier-${randomSuffix()}`,
          expiresAt: at(10 * minute)
        }
        yield* users.insertOAuthState(state)
        const takes = yield* Effect.all(
          Array.from({ length: 4 }, () => users.takeOAuthState(state.stateHash)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(takes.filter(Option.isSome).length, 1)
      })
    )
  })
