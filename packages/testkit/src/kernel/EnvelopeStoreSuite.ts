import { assert, layer } from "@effect/vitest"
import { Identity, Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect, type Layer, Option } from "effect"
import { at, makeOrg, makeProject, makeUser, uniqueId } from "../contract/Fixtures.ts"

/** What the envelope contract needs beside `EnvelopeStore`: the stores whose rows it reads and writes. */
export type EnvelopeStoreSuiteServices =
  | Kernel.EnvelopeStore
  | Kernel.Transactor
  | Kernel.AuditLog
  | Kernel.NodeRevisions
  | Orgs.OrgStore
  | Projects.ProjectStore
  | Identity.UserStore

/** An org with a project and a member (role `member`), and a user who is no member. */
const given = Effect.gen(function* () {
  const orgs = yield* Orgs.OrgStore
  const users = yield* Identity.UserStore
  const org = makeOrg()
  yield* orgs.insert(org)
  const project = makeProject(org.id)
  yield* (yield* Projects.ProjectStore).insert(project)
  const member = (yield* users.insert(makeUser(), at(0))).user
  const outsider = (yield* users.insert(makeUser(), at(0))).user
  yield* orgs.addMember(org.id, member.id, "member", at(1))
  return { org, project, member, outsider }
}).pipe(Effect.orDie)

/**
 * The `EnvelopeStore` contract: its fused reads answer what `OrgStore` and `ProjectStore` answer one by one, and
 * `finish` writes what `AuditLog.record` and `NodeRevisions.raise` write.
 */
export const envelopeStoreSuite = <E>(name: string, store: Layer.Layer<EnvelopeStoreSuiteServices, E>): void =>
  layer(store)(`${name}: EnvelopeStore contract`, (it) => {
    it.effect("access reads the org by slug, the user's role and the project by name, each none when absent", () =>
      Effect.gen(function* () {
        const envelope = yield* Kernel.EnvelopeStore
        const { org, project, member, outsider } = yield* given
        assert.deepStrictEqual(yield* envelope.access(org.slug, member.id, project.name), {
          org: Option.some(org),
          role: Option.some<Kernel.Role>("member"),
          project: Option.some(project)
        })
        assert.deepStrictEqual(yield* envelope.access(org.slug, member.id), {
          org: Option.some(org),
          role: Option.some<Kernel.Role>("member"),
          project: Option.none()
        })
        assert.deepStrictEqual(yield* envelope.access(org.slug, outsider.id, "nope"), {
          org: Option.some(org),
          role: Option.none(),
          project: Option.none()
        })
        assert.deepStrictEqual(yield* envelope.access(`${org.slug}-gone`, member.id, project.name), {
          org: Option.none(),
          role: Option.none(),
          project: Option.none()
        })
      })
    )

    it.effect("lock reads the same by id inside a transaction; another org's project is not read through it", () =>
      Effect.gen(function* () {
        const envelope = yield* Kernel.EnvelopeStore
        const tx = yield* Kernel.Transactor
        const { org, project, member, outsider } = yield* given
        const locked = yield* tx.withTransaction(envelope.lock(org.id, member.id, project.id))
        assert.deepStrictEqual(locked, {
          org: Option.some(org),
          role: Option.some<Kernel.Role>("member"),
          project: Option.some(project)
        })
        const outside = yield* tx.withTransaction(envelope.lock(org.id, outsider.id))
        assert.deepStrictEqual(outside, { org: Option.some(org), role: Option.none(), project: Option.none() })
        const gone = yield* tx.withTransaction(envelope.lock(uniqueId("org"), member.id, project.id))
        assert.isTrue(Option.isNone(gone.org) && Option.isNone(gone.role) && Option.isNone(gone.project))
      })
    )

    it.effect("finish records the audit row and raises the project's revision, either or both", () =>
      Effect.gen(function* () {
        const envelope = yield* Kernel.EnvelopeStore
        const tx = yield* Kernel.Transactor
        const audit = yield* Kernel.AuditLog
        const revisions = yield* Kernel.NodeRevisions
        const { org, project, member } = yield* given
        const event = (action: Kernel.AuditAction, offset: number) => ({
          action,
          orgId: org.id,
          actorId: member.id,
          target: project.id,
          data: { name: "A", nested: { camelCase: 1 } },
          at: at(offset)
        })
        const start = (yield* revisions.changedAfter(Number.MAX_SAFE_INTEGER, 1)).revision
        yield* tx.withTransaction(envelope.finish(event("secret.set", 1), project.id))
        const both = yield* revisions.changedAfter(start, 100)
        assert.deepStrictEqual(
          both.projects.filter((stamp) => stamp.projectId === project.id).length,
          1,
          "the project is stamped"
        )
        yield* tx.withTransaction(envelope.finish(event("secret.delete", 2), undefined))
        yield* tx.withTransaction(envelope.finish(undefined, project.id))
        yield* tx.withTransaction(envelope.finish(undefined, undefined))
        const after = yield* revisions.changedAfter(both.revision, 100)
        assert.isTrue(after.projects.some((stamp) => stamp.projectId === project.id))
        assert.isTrue(after.revision > both.revision)
        assert.deepStrictEqual(yield* audit.list({ orgId: org.id }), [
          event("secret.set", 1),
          event("secret.delete", 2)
        ])
      })
    )
  })
