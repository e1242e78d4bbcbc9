import { assert, layer } from "@effect/vitest"
import { Identity, Kernel, Orgs, Projects, Secrets } from "@hostplane/core"
import { Effect, Exit, type Layer, Option, Schema } from "effect"
import { at, givenProject, makeUser, minute, uniqueId } from "../contract/Fixtures.ts"

/** What the secret contract needs beside `SecretStore`: secrets belong to projects, which belong to orgs. */
export type SecretStoreSuiteServices =
  | Secrets.SecretStore
  | Identity.UserStore
  | Projects.ProjectStore
  | Orgs.OrgStore
  | Kernel.Transactor
  | Kernel.AuditLog
  | Kernel.NodeRevisions

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

/** A project in a new org with a member, a viewer and a user who is no member. */
const givenTeam = Effect.gen(function* () {
  const project = yield* givenProject
  const orgs = yield* Orgs.OrgStore
  const users = yield* Identity.UserStore
  const [member, viewer, outsider] = yield* Effect.forEach([0, 1, 2], () =>
    Effect.map(users.insert(makeUser(), at(0)), (inserted) => inserted.user)
  )
  yield* orgs.addMember(project.orgId, member!.id, "member", at(0))
  yield* orgs.addMember(project.orgId, viewer!.id, "viewer", at(0))
  return { project, member: member!, viewer: viewer!, outsider: outsider! }
}).pipe(Effect.orDie)

/** The guard of a secret put by `userId` to `project` under the member rule. */
const guardOf = (project: Projects.ProjectRow, userId: Kernel.UserId, refuseDeleting = true): Kernel.Guard => ({
  orgId: project.orgId,
  userId,
  projectId: project.id,
  roles: Kernel.rolesFrom("member"),
  refuseDeleting
})

const sealed = (tag: string): Secrets.Sealed => ({ keyId: `k-${tag}`, ciphertext: `c2VhbGVk${tag}==` })

/** The `SecretStore` contract: every adapter must pass it; projects are unique per test so a database may be shared. */
export const secretStoreSuite = <E>(name: string, store: Layer.Layer<SecretStoreSuiteServices, E>): void =>
  layer(store)(`${name}: SecretStore contract`, (it) => {
    it.effect("the first put of a name is version 1 and each put raises it by one", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const project = yield* givenProject
        assert.deepStrictEqual(yield* secrets.put(project.id, "API_KEY", sealed("a"), at(0)), {
          name: "API_KEY",
          version: 1,
          updatedAt: at(0)
        })
        assert.deepStrictEqual(yield* secrets.put(project.id, "API_KEY", sealed("b"), at(minute)), {
          name: "API_KEY",
          version: 2,
          updatedAt: at(minute)
        })
        assert.deepStrictEqual(yield* secrets.list(project.id), [
          { name: "API_KEY", version: 2, updatedAt: at(minute) }
        ])
        assert.deepStrictEqual(yield* secrets.listSealed(project.id), [
          { projectId: project.id, name: "API_KEY", version: 2, sealed: sealed("b"), updatedAt: at(minute) }
        ])
      })
    )

    it.effect("list and listSealed answer a project's secrets by name in code-unit order, names case-sensitive", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const project = yield* givenProject
        for (const secret of ["b", "_x", "B", "a", "A"]) yield* secrets.put(project.id, secret, sealed(secret), at(0))
        assert.deepStrictEqual(
          (yield* secrets.list(project.id)).map((meta) => meta.name),
          ["A", "B", "_x", "a", "b"]
        )
        assert.deepStrictEqual(
          (yield* secrets.listSealed(project.id)).map((row) => [row.name, row.sealed.keyId]),
          [
            ["A", "k-A"],
            ["B", "k-B"],
            ["_x", "k-_x"],
            ["a", "k-a"],
            ["b", "k-b"]
          ]
        )
      })
    )

    it.effect("projects are separate: the same name in two projects has its own version and value", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const first = yield* givenProject
        const second = yield* givenProject
        yield* secrets.put(first.id, "TOKEN", sealed("1"), at(0))
        yield* secrets.put(first.id, "TOKEN", sealed("2"), at(0))
        assert.strictEqual((yield* secrets.put(second.id, "TOKEN", sealed("3"), at(0))).version, 1)
        assert.deepStrictEqual(
          (yield* secrets.listSealed(second.id)).map((row) => row.sealed),
          [sealed("3")]
        )
        assert.deepStrictEqual(yield* secrets.list(uniqueId("prj")), [])
      })
    )

    it.effect("remove answers true once, then false; a later put of the name starts again at version 1", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const project = yield* givenProject
        yield* secrets.put(project.id, "GONE", sealed("x"), at(0))
        yield* secrets.put(project.id, "KEPT", sealed("y"), at(0))
        assert.isTrue(yield* secrets.remove(project.id, "GONE"))
        assert.isFalse(yield* secrets.remove(project.id, "GONE"))
        assert.isFalse(yield* secrets.remove(project.id, "gone"))
        assert.deepStrictEqual(
          (yield* secrets.list(project.id)).map((meta) => meta.name),
          ["KEPT"]
        )
        assert.strictEqual((yield* secrets.put(project.id, "GONE", sealed("z"), at(minute))).version, 1)
      })
    )

    it.effect("20 concurrent puts of one name get the versions 1 to 20, each once", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const project = yield* givenProject
        const metas = yield* Effect.forEach(
          Array.from({ length: 20 }, (_, i) => i),
          (i) => secrets.put(project.id, "RACE", sealed(String(i)), at(i)),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          metas.map((meta) => meta.version).sort((a, b) => a - b),
          Array.from({ length: 20 }, (_, i) => i + 1)
        )
        assert.strictEqual((yield* secrets.list(project.id))[0]?.version, 20)
      })
    )

    it.effect(
      "a put carrying the envelope's finish checks its guard, then records its audit row and raise, or nothing",
      () =>
        Effect.gen(function* () {
          const secrets = yield* Secrets.SecretStore
          const audit = yield* Kernel.AuditLog
          const revisions = yield* Kernel.NodeRevisions
          const { project, member, viewer, outsider } = yield* givenTeam
          const event: Kernel.AuditEvent = {
            action: "secret.set",
            orgId: project.orgId,
            actorId: member.id,
            target: project.id,
            data: { name: "CARRIED" },
            at: at(0)
          }
          const guard = (userId: Kernel.UserId, refuseDeleting = true) => guardOf(project, userId, refuseDeleting)
          const start = (yield* revisions.changedAfter(Number.MAX_SAFE_INTEGER, 1)).revision
          const raisedSince = (revision: number) =>
            Effect.map(revisions.changedAfter(revision, 1000), (changed) =>
              changed.projects.some((stamp) => stamp.projectId === project.id)
            )

          const meta = yield* secrets.put(project.id, "CARRIED", sealed("a"), at(0), {
            guard: guard(member.id),
            audit: event,
            raise: project.id
          })
          assert.deepStrictEqual(meta, { name: "CARRIED", version: 1, updatedAt: at(0) })
          assert.deepStrictEqual(yield* audit.list({ orgId: project.orgId }), [event])
          assert.isTrue(yield* raisedSince(start))
          const afterFirst = (yield* revisions.changedAfter(Number.MAX_SAFE_INTEGER, 1)).revision
          yield* secrets.put(project.id, "CARRIED", sealed("b"), at(minute), {
            guard: guard(member.id),
            audit: undefined,
            raise: undefined
          })
          assert.strictEqual((yield* audit.list({ orgId: project.orgId })).length, 1)
          assert.isFalse(yield* raisedSince(afterFirst))

          // A viewer and an outsider are refused with what the guard read; nothing is written.
          const refusedViewer = yield* Effect.flip(
            secrets.put(project.id, "CARRIED", sealed("c"), at(minute), {
              guard: guard(viewer.id),
              audit: event,
              raise: project.id
            })
          )
          assert.deepStrictEqual(refusedViewer.read.role, Option.some<Kernel.Role>("viewer"))
          assert.deepStrictEqual(
            Option.map(refusedViewer.read.project, (row) => row.id),
            Option.some(project.id)
          )
          const refusedOutsider = yield* Effect.flip(
            secrets.put(project.id, "CARRIED", sealed("c"), at(minute), {
              guard: guard(outsider.id),
              audit: event,
              raise: project.id
            })
          )
          assert.isTrue(Option.isNone(refusedOutsider.read.role) && Option.isSome(refusedOutsider.read.org))
          const unknownOrg = yield* Effect.flip(
            secrets.put(project.id, "CARRIED", sealed("c"), at(minute), {
              guard: { ...guard(member.id), orgId: uniqueId("org") as Kernel.OrgId },
              audit: event,
              raise: project.id
            })
          )
          assert.isTrue(Option.isNone(unknownOrg.read.org))

          // A project whose delete was accepted: refused unless the guard allows it.
          yield* (yield* Projects.ProjectStore).markDeleting(project.id, at(minute))
          const deleting = yield* Effect.flip(
            secrets.put(project.id, "CARRIED", sealed("c"), at(minute), {
              guard: guard(member.id),
              audit: event,
              raise: project.id
            })
          )
          assert.isNotNull(Option.getOrThrow(deleting.read.project).deletingSince)
          assert.strictEqual((yield* secrets.list(project.id))[0]?.version, 2)
          assert.strictEqual((yield* audit.list({ orgId: project.orgId })).length, 1)
          assert.isFalse(yield* raisedSince(afterFirst))
          const allowed = yield* secrets.put(project.id, "CARRIED", sealed("d"), at(minute), {
            guard: guard(member.id, false),
            audit: undefined,
            raise: undefined
          })
          assert.strictEqual(allowed.version, 3)
        })
    )

    it.effect(
      "a guarded put inside a transaction that fails leaves nothing; 20 concurrent ones get versions 1 to 20",
      () =>
        Effect.gen(function* () {
          const secrets = yield* Secrets.SecretStore
          const tx = yield* Kernel.Transactor
          const audit = yield* Kernel.AuditLog
          const { project, member } = yield* givenTeam
          const finish = (i: number): Kernel.Finish => ({
            guard: guardOf(project, member.id),
            audit: {
              action: "secret.set",
              orgId: project.orgId,
              actorId: member.id,
              target: project.id,
              data: { name: "RACE", i },
              at: at(i)
            },
            raise: project.id
          })
          const exit = yield* Effect.exit(
            tx.withTransaction(
              Effect.andThen(
                secrets.put(project.id, "RACE", sealed("x"), at(0), finish(0)),
                Effect.fail(new Boom({ message: "roll back" }))
              )
            )
          )
          assert.isTrue(Exit.isFailure(exit))
          assert.deepStrictEqual(yield* secrets.list(project.id), [])
          assert.deepStrictEqual(yield* audit.list({ orgId: project.orgId }), [])
          const metas = yield* Effect.forEach(
            Array.from({ length: 20 }, (_, i) => i),
            (i) => secrets.put(project.id, "RACE", sealed(String(i)), at(i), finish(i)),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(
            metas.map((meta) => meta.version).sort((a, b) => a - b),
            Array.from({ length: 20 }, (_, i) => i + 1)
          )
          assert.strictEqual((yield* audit.list({ orgId: project.orgId })).length, 20)
        })
    )

    it.effect("a put or remove inside a failed transaction leaves nothing behind", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const tx = yield* Kernel.Transactor
        const project = yield* givenProject
        yield* secrets.put(project.id, "STAYS", sealed("s"), at(0))
        const exit = yield* Effect.exit(
          tx.withTransaction(
            Effect.gen(function* () {
              yield* secrets.put(project.id, "STAYS", sealed("t"), at(minute))
              yield* secrets.put(project.id, "NEW", sealed("n"), at(minute))
              return yield* new Boom({ message: "roll back" })
            })
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        const removal = yield* Effect.exit(
          tx.withTransaction(
            Effect.andThen(secrets.remove(project.id, "STAYS"), Effect.fail(new Boom({ message: "roll back" })))
          )
        )
        assert.isTrue(Exit.isFailure(removal))
        assert.deepStrictEqual(yield* secrets.listSealed(project.id), [
          { projectId: project.id, name: "STAYS", version: 1, sealed: sealed("s"), updatedAt: at(0) }
        ])
      })
    )

    it.effect("removing the project (ProjectStore.remove) removes its secrets", () =>
      Effect.gen(function* () {
        const secrets = yield* Secrets.SecretStore
        const project = yield* givenProject
        yield* secrets.put(project.id, "A", sealed("a"), at(0))
        yield* (yield* Projects.ProjectStore).remove(project.id)
        assert.deepStrictEqual(yield* secrets.listSealed(project.id), [])
      })
    )
  })
