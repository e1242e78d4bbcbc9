import { layerMemory } from "@hostplane/testkit"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { CoreWatch } from "../src/index.ts"
import { unique, useSuite } from "./support/TestServer.ts"

/** A watch the test sets: whether it counts the database as down, and what asking again answers. */
const watch = { down: false, answersWhenAsked: false, asked: 0 }
const fakeWatch = Layer.succeed(CoreWatch)({
  isDown: () => watch.down,
  onDown: () => () => {},
  recheck: Effect.sync(() => {
    watch.asked++
    if (watch.answersWhenAsked) watch.down = false
    return !watch.down
  }),
  exempt: new Set(["/livez", "/readyz"])
})

/** decisions.md part 15's outage rule, as the request pipeline applies the host's watch to requests with a body. */
describe("a write while the watch counts the control database as down", () => {
  const suite = useSuite(() => Layer.fresh(layerMemory), {}, fakeWatch)
  const orgSlugs = async (token: string) =>
    ((await suite.api.get("/v1/orgs", { token })).body.items as Array<{ slug: string }>).map((org) => org.slug)

  it("is refused with 503 no_core, nothing written, when asking again finds it down", async () => {
    const slug = unique("down")
    Object.assign(watch, { down: true, answersWhenAsked: false, asked: 0 })
    const refused = await suite.api.post("/v1/orgs", { name: "Down", slug }, { token: suite.admin.token })
    expect(refused.status).toBe(503)
    expect(refused.body).toMatchObject({ code: "no_core" })
    expect(watch.asked).toBe(1)
    watch.down = false
    expect(await orgSlugs(suite.admin.token)).not.toContain(slug)
  })

  it("goes through when asking again finds it answering, without waiting for the watch's next ping", async () => {
    const slug = unique("back")
    Object.assign(watch, { down: true, answersWhenAsked: true, asked: 0 })
    const created = await suite.api.post("/v1/orgs", { name: "Back", slug }, { token: suite.admin.token })
    expect(created.status).toBe(201)
    expect(watch.asked).toBe(1)
    expect(await orgSlugs(suite.admin.token)).toContain(slug)
  })

  it("is not asked about while the watch finds the database up", async () => {
    Object.assign(watch, { down: false, answersWhenAsked: false, asked: 0 })
    expect(
      (await suite.api.post("/v1/orgs", { name: "Up", slug: unique("up") }, { token: suite.admin.token })).status
    ).toBe(201)
    expect(watch.asked).toBe(0)
  })
})
