import { assert, describe, it } from "@effect/vitest"
import { Orgs } from "@hostplane/core"
import { Effect } from "effect"
import { memberOf, orgIdOf, signIn, withCore } from "./support/CoreMemory.ts"

describe("Notifications (spec 4.2) on the memory store", () => {
  it.effect("GET notifications: viewer or higher, newest first, at most limit; outsiders get 404", () =>
    withCore()(
      Effect.gen(function* () {
        const notifications = yield* Orgs.Notifications
        const store = yield* Orgs.OrgStore
        const { actor: admin } = yield* signIn("alice")
        yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
        const { actor: viewer } = yield* memberOf(admin, "team", "vic", "viewer")
        const { actor: outsider } = yield* signIn("eve")
        const orgId = yield* orgIdOf("team")
        for (const [i, kind] of (["limit", "backup", "restore"] as const).entries()) {
          yield* store.insertNotification({
            id: `ntf_${i}`,
            orgId,
            kind,
            message: `notice ${i}`,
            projectName: i === 0 ? null : "web",
            createdAt: `2030-01-0${i + 1}T00:00:00.000Z`,
            mailId: null
          })
        }
        const listed = yield* notifications.list(viewer, "team", undefined)
        assert.deepStrictEqual(
          listed.map((n) => [n.id, n.kind, n.sentAt]),
          [
            ["ntf_2", "restore", null],
            ["ntf_1", "backup", null],
            ["ntf_0", "limit", null]
          ]
        )
        assert.deepStrictEqual(
          (yield* notifications.list(viewer, "team", 1)).map((n) => n.id),
          ["ntf_2"]
        )
        assert.strictEqual((yield* notifications.list(viewer, "team", 0)).length, 1)
        assert.strictEqual((yield* Effect.flip(notifications.list(outsider, "team", undefined)))._tag, "NotFound")
      })
    )
  )
})
