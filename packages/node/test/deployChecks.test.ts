import { Deployments } from "@hostplane/core"
import { manifestEntry } from "@hostplane/testkit"
import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import { auditOf } from "../../http/test/support/TestServer.ts"
import { useRuntimeSuite } from "./support/RuntimeServer.ts"

describe("deploy checks of a bundle's worker (decisions.md part 13, real workerd)", () => {
  const suite = useRuntimeSuite()

  /** Whether the artifact store still holds the bundle, or an index of it. */
  const stored = (digest: string) =>
    suite.server.run(
      Effect.gen(function* () {
        const artifacts = yield* Deployments.ArtifactStore
        return (yield* artifacts.has(digest)) || Option.isSome(yield* artifacts.index(digest))
      })
    )

  const refused = async (entries: Parameters<typeof suite.deploy>[2]) => {
    const { slug, name } = await suite.newProject()
    const reply = await suite.deploy(slug, name, entries)
    const list = await suite.api.get(`/v1/orgs/${slug}/projects/${name}/deployments`, { token: suite.admin.token })
    expect(list.body.items).toEqual([])
    // Nothing is kept: not the bundle's bytes either.
    expect(await stored(reply.digest)).toBe(false)
    return reply
  }

  it("worker/ with files but no entry, or a main naming no file, is 400 invalid_bundle worker_main_missing", async () => {
    const noEntry = await refused([
      manifestEntry({ name: "a" }),
      { name: "worker/lib.js", content: "export const x = 1" }
    ])
    expect(noEntry.status).toBe(400)
    expect(noEntry.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_main_missing" } })
    const badMain = await refused([
      manifestEntry({ name: "a", main: "server.js" }),
      { name: "worker/index.js", content: "export default { fetch() { return new Response('x') } }" }
    ])
    expect(badMain.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_main_missing" } })
  })

  it("an entry that does not load is 400 worker_invalid with the runtime's message; nothing is kept", async () => {
    const syntax = await refused([
      manifestEntry({ name: "a" }),
      { name: "worker/index.js", content: "export default {" }
    ])
    expect(syntax.status).toBe(400)
    expect(syntax.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_invalid" } })
    expect(syntax.body.details.message).toMatch(/SyntaxError/)
    const noFetch = await refused([
      manifestEntry({ name: "a" }),
      { name: "worker/index.js", content: "export default { hello: 1 }" }
    ])
    expect(noFetch.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_invalid" } })
    expect(noFetch.body.details.message).toContain("no default export with a fetch method")
    const missingImport = await refused([
      manifestEntry({ name: "a" }),
      {
        name: "worker/index.js",
        content: "import x from './nope.js'\nexport default { fetch() { return new Response(x) } }"
      }
    ])
    expect(missingImport.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_invalid" } })
  })

  // The check runs beside the deployment's transaction, which has already written the row and switched the project
  // to it when it waits for the check: a refusal must undo both, leaving the live deployment and its audit as they were.
  it("a refused bundle on a project with a live deployment keeps nothing: same list, same live one, no audit row", async () => {
    const { slug, name } = await suite.newProject()
    const good = await suite.deploy(slug, name, [
      manifestEntry({ name: "a" }),
      { name: "worker/index.js", content: "export default { fetch() { return new Response('ok') } }" }
    ])
    expect(good.status).toBe(201)
    const refusedReply = await suite.deploy(slug, name, [
      manifestEntry({ name: "a" }),
      { name: "worker/index.js", content: "export default { fetch() {" }
    ])
    expect(refusedReply.status).toBe(400)
    expect(refusedReply.body).toMatchObject({ code: "invalid_bundle", details: { reason: "worker_invalid" } })
    expect(await stored(refusedReply.digest)).toBe(false)
    expect(await stored(good.digest)).toBe(true)
    const list = await suite.api.get(`/v1/orgs/${slug}/projects/${name}/deployments`, { token: suite.admin.token })
    expect(list.body.items).toMatchObject([{ id: good.body.id, live: true }])
    const created = (await auditOf(suite.server, slug)).filter((event) => event.action === "deployment.create")
    expect(created.map((event) => event.data.deploymentId)).toEqual([good.body.id])
    const next = await suite.deploy(slug, name, [
      manifestEntry({ name: "a" }),
      { name: "worker/index.js", content: "export default { fetch() { return new Response('two') } }" }
    ])
    expect(next.status).toBe(201)
    expect(next.body).toMatchObject({ version: good.body.version + 1, live: true })
  })

  it("a main relative to worker/, other modules, JSON and text imports load and deploy", async () => {
    const { slug, name } = await suite.newProject()
    const reply = await suite.deploy(slug, name, [
      manifestEntry({
        name: "a",
        main: "src/main.mjs",
        compatibilityDate: "2026-10-01",
        compatibilityFlags: ["nodejs_compat"]
      }),
      {
        name: "worker/src/main.mjs",
        content:
          "import data from '../data.json'\nimport page from './page.txt'\nimport { greet } from './lib.js'\nexport default { fetch() { return new Response(greet(data.name) + page) } }"
      },
      { name: "worker/src/lib.js", content: "export const greet = (n) => 'hi ' + n" },
      { name: "worker/src/page.txt", content: "!" },
      { name: "worker/data.json", content: '{"name":"x"}' }
    ])
    expect(reply.status).toBe(201)
  })

  it("compatibilityDate, compatibilityFlags and workerFirst are checked (400 manifest_invalid)", async () => {
    for (const manifest of [
      { compatibilityDate: "2026-13-01" },
      { compatibilityDate: "yesterday" },
      { compatibilityFlags: "nodejs_compat" },
      { compatibilityFlags: [1] },
      { workerFirst: "yes" }
    ]) {
      const reply = await refused([
        manifestEntry({ name: "a", ...manifest }),
        { name: "worker/index.js", content: "export default { fetch() { return new Response('x') } }" }
      ])
      expect(reply.status, JSON.stringify(manifest)).toBe(400)
      expect(reply.body, JSON.stringify(manifest)).toMatchObject({
        code: "invalid_bundle",
        details: { reason: "manifest_invalid" }
      })
    }
  })
})

describe("SERVICE_WORKERS=off", () => {
  const suite = useRuntimeSuite({ enabled: false })

  it("worker paths answer 503 worker_unavailable; assets are still served", async () => {
    const { slug, name, hostname } = await suite.newProject()
    const deployed = await suite.deploy(slug, name, [
      manifestEntry({ name: "a" }),
      { name: "worker/index.js", content: "export default { fetch() { return new Response('x') } }" },
      { name: "assets/index.html", content: "home" }
    ])
    expect(deployed.status).toBe(201)
    const { edgeCall } = await import("./support/RuntimeServer.ts")
    const api = await edgeCall(suite.edgeUrl, hostname, "/api")
    expect(api.status).toBe(503)
    expect(api.json().code).toBe("worker_unavailable")
    expect((await edgeCall(suite.edgeUrl, hostname, "/")).text).toBe("home")
  })
})
