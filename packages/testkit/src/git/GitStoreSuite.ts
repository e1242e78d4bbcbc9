import { assert, layer } from "@effect/vitest"
import { Git, Identity, type Kernel, type Orgs, type Projects } from "@hostplane/core"
import { Effect, Option, type Layer } from "effect"
import { at, givenProject, makeUser, minute, randomSuffix, uniqueId } from "../contract/Fixtures.ts"

/** What the git contract needs: repos belong to projects, tokens and keys to users. */
export type GitStoreSuiteServices =
  Git.RepoStore | Git.CredentialStore | Projects.ProjectStore | Orgs.OrgStore | Identity.UserStore | Kernel.Transactor

const repoOf = (project: Projects.ProjectRow, name: string, overrides: Partial<Git.RepoRow> = {}): Git.RepoRow => ({
  id: uniqueId("repo"),
  orgId: project.orgId,
  projectId: project.id,
  name,
  visibility: "private",
  defaultBranch: "main",
  deployOnPush: false,
  createdAt: at(0),
  deletedAt: null,
  ...overrides
})

const givenUser = Effect.gen(function* () {
  const user = makeUser()
  yield* (yield* Identity.UserStore).insert(user, at(0))
  return user
})

/** The `RepoStore` and `CredentialStore` contracts; every row is unique to its test so a database may be shared. */
export const gitStoreSuite = <E>(name: string, store: Layer.Layer<GitStoreSuiteServices, E>): void =>
  layer(store)(`${name}: RepoStore and CredentialStore contract`, (it) => {
    it.effect("live repo names are unique per project ignoring case; a soft delete frees the name at once", () =>
      Effect.gen(function* () {
        const repos = yield* Git.RepoStore
        const project = yield* givenProject
        const first = repoOf(project, "Site")
        yield* repos.insert(first)
        const clash = yield* Effect.flip(repos.insert(repoOf(project, "site")))
        assert.strictEqual(clash._tag, "RepoExists")
        assert.deepStrictEqual(
          Option.map(yield* repos.findByName(project.id, "SITE"), (row) => row.id),
          Option.some(first.id)
        )
        yield* repos.softDelete(first.id, at(minute))
        assert.isTrue(Option.isNone(yield* repos.findByName(project.id, "site")))
        assert.deepStrictEqual(yield* repos.list(project.id), [])
        const second = repoOf(project, "site")
        yield* repos.insert(second)
        assert.deepStrictEqual(
          (yield* repos.list(project.id)).map((row) => row.id),
          [second.id]
        )
        const other = repoOf(project, "other")
        yield* repos.insert(other)
        assert.strictEqual((yield* Effect.flip(repos.update(other.id, { ...other, name: "SITE" })))._tag, "RepoExists")
        yield* repos.update(other.id, {
          name: "renamed",
          visibility: "public",
          defaultBranch: "trunk",
          deployOnPush: true
        })
        const renamed = yield* repos.findByName(project.id, "renamed")
        assert.deepStrictEqual(
          Option.map(renamed, (row) => [row.id, row.visibility, row.defaultBranch, row.deployOnPush]),
          Option.some([other.id, "public", "trunk", true])
        )
        assert.deepStrictEqual(yield* repos.countInOrg(project.orgId), { count: 2, names: ["renamed", "site"] })
      })
    )

    it.effect("soft-deleted repos are listed for purging by deletion time; purge forgets them and their history", () =>
      Effect.gen(function* () {
        const repos = yield* Git.RepoStore
        const project = yield* givenProject
        const user = yield* givenUser
        const [a, b] = [repoOf(project, `a-${randomSuffix()}`), repoOf(project, `b-${randomSuffix()}`)]
        yield* repos.insert(a)
        yield* repos.insert(b)
        yield* repos.recordRefUpdates(
          a.id,
          user.id,
          [{ ref: "refs/heads/main", old: null, new: "1".repeat(40) }],
          at(0)
        )
        assert.deepStrictEqual(
          yield* repos.softDeleteProject(project.id, at(2 * minute)).pipe(Effect.map((ids) => [...ids].sort())),
          [a.id, b.id].sort()
        )
        const due = (yield* repos.listDeletedBefore(at(2 * minute), 1000)).filter((row) => row.projectId === project.id)
        assert.strictEqual(due.length, 2)
        assert.strictEqual(
          (yield* repos.listDeletedBefore(at(minute), 1000)).filter((row) => row.projectId === project.id).length,
          0
        )
        yield* repos.purge(a.id)
        assert.deepStrictEqual(yield* repos.listRefUpdates(a.id, 10), [])
        assert.deepStrictEqual(
          (yield* repos.listDeletedBefore(at(2 * minute), 1000))
            .filter((row) => row.projectId === project.id)
            .map((row) => row.id),
          [b.id]
        )
      })
    )

    it.effect(
      "ref updates come back newest first, at most the limit, with null for a creation's old and a deletion's new",
      () =>
        Effect.gen(function* () {
          const repos = yield* Git.RepoStore
          const project = yield* givenProject
          const user = yield* givenUser
          const repo = repoOf(project, "history")
          yield* repos.insert(repo)
          const [x, y] = ["a".repeat(40), "b".repeat(40)]
          yield* repos.recordRefUpdates(repo.id, user.id, [{ ref: "refs/heads/main", old: null, new: x }], at(0))
          yield* repos.recordRefUpdates(
            repo.id,
            user.id,
            [
              { ref: "refs/heads/main", old: x, new: y },
              { ref: "refs/tags/v1", old: x, new: null }
            ],
            at(minute)
          )
          assert.deepStrictEqual(yield* repos.listRefUpdates(repo.id, 2), [
            { ref: "refs/tags/v1", old: x, new: null, userId: user.id, at: at(minute) },
            { ref: "refs/heads/main", old: x, new: y, userId: user.id, at: at(minute) }
          ])
          assert.strictEqual((yield* repos.listRefUpdates(repo.id, 200)).length, 3)
        })
    )

    it.effect("tokens are found by hash; revoking twice keeps the first time; lastUsedAt moves only when stale", () =>
      Effect.gen(function* () {
        const credentials = yield* Git.CredentialStore
        const user = yield* givenUser
        const token: Git.AccessTokenRow = {
          id: uniqueId("pat"),
          userId: user.id,
          name: "ci",
          tokenHash: `hash-${randomSuffix()}`,
          createdAt: at(0),
          expiresAt: null,
          lastUsedAt: null,
          revokedAt: null
        }
        yield* credentials.insertToken(token)
        assert.deepStrictEqual(yield* credentials.findTokenByHash(token.tokenHash), Option.some(token))
        yield* credentials.touchToken(token.id, at(minute), at(0))
        yield* credentials.touchToken(token.id, at(minute + 1000), at(1000))
        assert.strictEqual((yield* credentials.listTokens(user.id))[0]?.lastUsedAt, at(minute))
        assert.isTrue(yield* credentials.revokeToken(user.id, token.id, at(2 * minute)))
        assert.isTrue(yield* credentials.revokeToken(user.id, token.id, at(3 * minute)))
        assert.strictEqual((yield* credentials.listTokens(user.id))[0]?.revokedAt, at(2 * minute))
        assert.isFalse(yield* credentials.revokeToken(makeUser().id, token.id, at(3 * minute)))
      })
    )

    it.effect("key fingerprints are unique across users; a removed key may be added again", () =>
      Effect.gen(function* () {
        const credentials = yield* Git.CredentialStore
        const [alice, bob] = [yield* givenUser, yield* givenUser]
        const fingerprint = `SHA256:${randomSuffix()}`
        const key: Git.SshKeyRow = {
          id: uniqueId("key"),
          userId: alice.id,
          title: "laptop",
          type: "ed25519",
          fingerprint,
          publicKey: "ssh-ed25519 AAAA",
          createdAt: at(0)
        }
        yield* credentials.insertKey(key)
        const clash = yield* Effect.flip(credentials.insertKey({ ...key, id: uniqueId("key"), userId: bob.id }))
        assert.strictEqual(clash._tag, "SshKeyExists")
        assert.deepStrictEqual(
          Option.map(yield* credentials.findKeyByFingerprint(fingerprint), (row) => row.userId),
          Option.some(alice.id)
        )
        assert.isFalse(yield* credentials.removeKey(bob.id, key.id))
        assert.isTrue(yield* credentials.removeKey(alice.id, key.id))
        assert.isTrue(Option.isNone(yield* credentials.findKeyByFingerprint(fingerprint)))
        yield* credentials.insertKey({ ...key, id: uniqueId("key"), userId: bob.id })
        assert.strictEqual((yield* credentials.listKeys(bob.id)).length, 1)
      })
    )
  })
