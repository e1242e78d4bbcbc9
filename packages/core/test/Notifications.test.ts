import { assert, describe, it } from "@effect/vitest"
import { Orgs } from "@hostplane/core"
import { Effect } from "effect"
import { memberOf, orgIdOf, signIn, withCore } from "./support/CoreMemory.ts"

/** What HTTP cannot reach; the notification rules are tested through HTTP (http/test/orgs.test.ts). */
describe("Notifications (spec 4.2) on the memory store", () => {
  it.effect("a limit below 1 asks the store for one notice (HTTP refuses it with 400 before)", () =>
    withCore()(
      Effect.gen(function* () {
        const notifications = yield* Orgs.Notifications
        const store = yield* Orgs.OrgStore
        const { actor: admin } = yield* signIn("alice")
        yield* (yield* Orgs.Orgs).create(admin, { name: "Team", slug: "team" })
        const { actor: viewer } = yield* memberOf(admin, "team", "vic", "viewer")
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
        assert.strictEqual((yield* notifications.list(viewer, "team", 0)).items.length, 1)
      })
    )
  )
})
