import { manifestEntry } from "@hostplane/testkit"
import { describe, expect, it } from "vitest"
import { edgeCall, eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"
import { descendantsNamed } from "./support/Processes.ts"

const worker = `export default {
  async fetch(request) {
    const url = new URL(request.url)
    if (url.pathname === "/loop") { for (;;) {} }
    return new Response("alive")
  }
}`

const bundle = [manifestEntry({ name: "app" }), { name: "worker/index.js", content: worker }]

describe("faults of the runtime (one shard, so every project shares the faulty process)", () => {
  const timeoutMs = 3_000
  const suite = useRuntimeSuite({ timeoutMs, shards: 1 })

  it("runs no workerd while the node holds no deployment; the first deploy starts it and is served", async () => {
    expect(suite.runtime.pids()).toEqual([undefined])
    const project = await suite.newProject()
    expect(suite.runtime.pids()).toEqual([undefined])
    expect((await suite.deploy(project.slug, project.name, bundle)).status).toBe(201)
    expect(descendantsNamed("workerd")(suite.runtime.pids()[0]!)).toHaveLength(1)
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).toBe("alive")
  })

  it("a busy loop is 504 worker_timeout; the shard restarts and other projects answer within the timeout plus 5 s", async () => {
    const looping = await suite.newProject()
    const other = await suite.newProject()
    expect((await suite.deploy(looping.slug, looping.name, bundle)).status).toBe(201)
    expect((await suite.deploy(other.slug, other.name, bundle)).status).toBe(201)
    expect((await edgeCall(suite.edgeUrl, other.hostname, "/")).text).toBe("alive")
    const restartsBefore = suite.runtime.restarts()[0]!
    const looped = await edgeCall(suite.edgeUrl, looping.hostname, "/loop")
    expect(looped.status).toBe(504)
    expect(looped.json().code).toBe("worker_timeout")
    const answered = await eventually(
      async () => (await edgeCall(suite.edgeUrl, other.hostname, "/")).text === "alive",
      timeoutMs + 5_000
    )
    expect(answered).toBe(true)
    expect(suite.runtime.restarts()[0]!).toBeGreaterThan(restartsBefore)
  })

  it("workerd killed with SIGKILL is started again and serves within 5 s", async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bundle)).status).toBe(201)
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).toBe("alive")
    const [workerd] = descendantsNamed("workerd")(suite.runtime.pids()[0]!)
    expect(workerd).toBeDefined()
    process.kill(workerd!, "SIGKILL")
    const served = await eventually(
      async () => (await edgeCall(suite.edgeUrl, project.hostname, "/")).text === "alive",
      5_000
    )
    expect(served).toBe(true)
    expect(descendantsNamed("workerd")(suite.runtime.pids()[0]!)).not.toContain(workerd)
  })
})
