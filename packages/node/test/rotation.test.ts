import { manifestEntry } from "@hostplane/testkit"
import { describe, expect, it } from "vitest"
import { edgeCall, eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"
import { descendantsNamed } from "./support/Processes.ts"

const bundle = (text: string) => [
  manifestEntry({ name: "app" }),
  { name: "worker/index.js", content: `export default { fetch() { return new Response(${JSON.stringify(text)}) } }` }
]

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("a shard holding stale isolates (one shard, a replacement after 3)", () => {
  const suite = useRuntimeSuite({ shards: 1, rotateAfterStale: 3 })

  it("is replaced by a fresh process while requests run: none fails, the old process stops, current code answers", async () => {
    const busy = await suite.newProject()
    const other = await suite.newProject()
    expect((await suite.deploy(other.slug, other.name, bundle("other"))).status).toBe(201)
    expect((await edgeCall(suite.edgeUrl, other.hostname, "/")).text).toBe("other")
    const [first] = descendantsNamed("workerd")(suite.runtime.pids()[0]!)
    expect(first).toBeDefined()
    const before = suite.runtime.rotations()[0]!

    // Requests run all along, four at a time: each must be answered by the current code.
    let running = true
    const failures: Array<string> = []
    let served = 0
    const load = Array.from({ length: 4 }, async () => {
      while (running) {
        const reply = await edgeCall(suite.edgeUrl, other.hostname, "/")
        if (reply.status === 200 && reply.text === "other") served += 1
        else failures.push(`${reply.status} ${reply.text.slice(0, 100)}`)
      }
    })
    // Each deploy leaves the isolate of the one before it stale.
    for (let version = 1; version <= 5; version++) {
      expect((await suite.deploy(busy.slug, busy.name, bundle(`v${version}`))).status).toBe(201)
      expect((await edgeCall(suite.edgeUrl, busy.hostname, "/")).text).toBe(`v${version}`)
    }
    const rotated = await eventually(async () => suite.runtime.rotations()[0]! > before, 30_000)
    const stopped = await eventually(async () => !alive(first!), 30_000)
    running = false
    await Promise.all(load)

    expect(rotated).toBe(true)
    expect(stopped).toBe(true)
    expect(failures).toEqual([])
    expect(served).toBeGreaterThan(0)
    expect(descendantsNamed("workerd")(suite.runtime.pids()[0]!)).not.toContain(first)
    expect((await edgeCall(suite.edgeUrl, busy.hostname, "/")).text).toBe("v5")
    expect((await edgeCall(suite.edgeUrl, other.hostname, "/")).text).toBe("other")
  })
})

describe("a shard whose stale isolates outnumber those in use (one shard, the default threshold of 16)", () => {
  const suite = useRuntimeSuite({ shards: 1 })

  it("is replaced from a quarter of the threshold on, and the current code answers", async () => {
    const project = await suite.newProject()
    const before = suite.runtime.rotations()[0]!
    // v1 in use and the four before it stale: 4 wasted isolates against 1 in use.
    for (let version = 0; version <= 4; version++) {
      expect((await suite.deploy(project.slug, project.name, bundle(`v${version}`))).status).toBe(201)
      expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).toBe(`v${version}`)
    }
    expect(await eventually(async () => suite.runtime.rotations()[0]! > before, 30_000)).toBe(true)
    expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).toBe("v4")
  })
})

describe("a shard holding isolates idle past SERVICE_WORKER_IDLE (one shard, idle after 1 s)", () => {
  const suite = useRuntimeSuite({ shards: 1, idleMs: 1_000 })

  it("is replaced while a busy project's requests run: none fails, the idle projects answer again", async () => {
    const busy = await suite.newProject()
    expect((await suite.deploy(busy.slug, busy.name, bundle("busy"))).status).toBe(201)
    expect((await edgeCall(suite.edgeUrl, busy.hostname, "/")).text).toBe("busy")
    const [first] = descendantsNamed("workerd")(suite.runtime.pids()[0]!)
    expect(first).toBeDefined()
    const before = suite.runtime.rotations()[0]!

    // The busy project is asked all along, two at a time: it stays in use, and no request of it may fail.
    let running = true
    const failures: Array<string> = []
    let served = 0
    const load = Array.from({ length: 2 }, async () => {
      while (running) {
        const reply = await edgeCall(suite.edgeUrl, busy.hostname, "/")
        if (reply.status === 200 && reply.text === "busy") served += 1
        else failures.push(`${reply.status} ${reply.text.slice(0, 100)}`)
      }
    })
    // Four projects asked once each: idle a second later, they outnumber the one in use.
    const quiet: Array<Awaited<ReturnType<typeof suite.newProject>>> = []
    for (let index = 0; index < 4; index++) {
      const project = await suite.newProject()
      expect((await suite.deploy(project.slug, project.name, bundle(`quiet ${index}`))).status).toBe(201)
      expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).toBe(`quiet ${index}`)
      quiet.push(project)
    }
    const rotated = await eventually(async () => suite.runtime.rotations()[0]! > before, 60_000)
    const stopped = await eventually(async () => !alive(first!), 30_000)
    running = false
    await Promise.all(load)

    expect(rotated).toBe(true)
    expect(stopped).toBe(true)
    expect(failures).toEqual([])
    expect(served).toBeGreaterThan(0)
    for (const [index, project] of quiet.entries()) {
      expect((await edgeCall(suite.edgeUrl, project.hostname, "/")).text).toBe(`quiet ${index}`)
    }
  })
})
