import { assert, describe, it } from "@effect/vitest"
import * as Kernel from "@hostplane/core/kernel/index"
import { Effect } from "effect"

describe("branded ids", () => {
  it("an org id cannot be passed where a project id is expected", () => {
    const projectOnly = (id: Kernel.ProjectId): string => id
    const org = Kernel.makeId("org", "org_1")
    // @ts-expect-error an OrgId is not a ProjectId
    assert.strictEqual(projectOnly(org), "org_1")
    assert.strictEqual(projectOnly(Kernel.makeId("prj", "prj_1")), "prj_1")
  })

  it.effect("newId mints an id with the prefix of its kind", () =>
    Effect.gen(function* () {
      const tokens = yield* Kernel.Tokens
      const id: Kernel.DeploymentId = yield* Kernel.newId(tokens, "dep")
      assert.match(id, /^dep_[0-9a-z]{26}$/)
    }).pipe(Effect.provide(Kernel.Tokens.layer))
  )
})
