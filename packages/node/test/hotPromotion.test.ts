import { EventEmitter } from "node:events"
import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { type HotWorker, makeHot } from "../src/runtime/HotShard.ts"

/**
 * The hot shard's promotion and build schedule, on the clock the test moves: a stand-in for workerd answers the
 * worker check on each socket its config names, so only the schedule is under test (hotShard.test runs the real one).
 */
const workerOf = async (key: string): Promise<HotWorker> => ({
  projectId: key.split(":")[0]!,
  key,
  deploymentId: "d1",
  digest: "sha256:0",
  compatibilityDate: "2026-11-01",
  compatibilityFlags: [],
  modules: [["__hostplane_entry.js", { js: "export default {}" }]],
  secrets: {},
  bindings: {}
})

/** A stand-in for a hot process: listens on every unix socket of its config and answers the check with 204. */
const standIn = (config: string): ChildProcess => {
  const servers = [...config.matchAll(/address = "unix:([^"]+)"/g)]
    .map((match) => match[1]!)
    .filter((socket) => /\/hot-\d+-\d+\.sock$/.test(socket))
    .map((socket) =>
      Http.createServer((request, response) => {
        response.writeHead(request.headers["x-hostplane-check"] === "1" ? 204 : 500)
        response.end()
      }).listen(socket)
    )
  const child = Object.assign(new EventEmitter(), {
    exitCode: null as number | null,
    signalCode: null as string | null,
    pid: 1,
    kill: () => {
      for (const server of servers) server.close()
      child.signalCode = "SIGKILL"
      child.emit("exit", null, "SIGKILL")
      return true
    }
  })
  return child as unknown as ChildProcess
}

describe("a project that becomes busy is built for at once", () => {
  let dir: string
  beforeEach(() => {
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hot-promotion-"))
    // The schedule's timers and clock; sockets and their timeouts stay real.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] })
  })
  afterEach(() => {
    vi.useRealTimers()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  /** The hot shard on the stand-in, its workers read through `readWorker` (the suite's `workerOf` by default). */
  const makeHotHere = (readWorker: typeof workerOf = workerOf) => {
    const spawned: Array<string> = []
    const hot = makeHot({
      settings: { max: 2, promoteRate: 5 },
      timeoutMs: 3_000,
      outbound: "public",
      dir,
      nodeSocket: Path.join(dir, "node.sock"),
      routerSource: "export default {}",
      spawn: (label, config) => {
        spawned.push(label)
        return standIn(Fs.readFileSync(config, "utf8"))
      },
      own: () => {},
      workerOf: readWorker,
      inflight: () => 0,
      forget: () => {}
    })
    return { hot, spawned }
  }

  /** The clock moved by `ms`, real I/O (the stand-in's answers) let through between steps of 10 ms. */
  const pass = async (ms: number) => {
    for (let left = ms; left > 0; left -= 10) {
      await vi.advanceTimersByTimeAsync(Math.min(10, left))
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  /** The hot socket once the hot process serves `key` (bounded in steps of the test's clock). */
  const servedHot = async (hot: ReturnType<typeof makeHot>, projectId: string, key: string) => {
    for (let step = 0; step < 500; step++) {
      const socket = hot.socketOf(projectId, key)
      if (socket !== undefined) return socket
      await pass(10)
    }
    return undefined
  }

  it("the promotion rate reached in two consecutive seconds starts the hot process at that second's tick, with no debounce; a deploy's new key still waits a second of quiet", async () => {
    const { hot, spawned } = makeHotHere()
    try {
      const key = "p1:abc:v1"
      for (const _ of Array(5)) expect(hot.socketOf("p1", key)).toBeUndefined()
      await pass(1_000)
      expect(spawned).toEqual([])
      for (const _ of Array(5)) hot.socketOf("p1", key)
      // The second busy second's tick promotes the project, and its build starts right away.
      await pass(1_000)
      await pass(10)
      expect(spawned).toEqual(["hot 1"])
      const socket = await servedHot(hot, "p1", key)
      expect(socket).toBe(Path.join(dir, "hot-1-0.sock"))
      expect(hot.state().projects).toEqual(["p1"])

      // A deploy: the new key is served by the loader shard, and the new process is built a second after the last
      // change, not at once.
      const deployed = "p1:def:v2"
      expect(hot.socketOf("p1", deployed)).toBeUndefined()
      await pass(500)
      expect(spawned).toEqual(["hot 1"])
      await pass(600)
      expect(spawned).toEqual(["hot 1", "hot 2"])
      expect(await servedHot(hot, "p1", deployed)).toBe(Path.join(dir, "hot-2-0.sock"))
    } finally {
      await hot.stop()
    }
  })

  it("a build still reading its workers when the hot shard stops starts nothing and fails nothing, its directory gone", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const rejections: Array<unknown> = []
    const onRejection = (reason: unknown) => rejections.push(reason)
    process.on("unhandledRejection", onRejection)
    const { hot, spawned } = makeHotHere(async (key) => {
      await held
      return workerOf(key)
    })
    try {
      for (const _ of Array(5)) hot.socketOf("p1", "p1:abc:v1")
      await pass(1_000)
      for (const _ of Array(5)) hot.socketOf("p1", "p1:abc:v1")
      // Promoted at this tick: the build starts and waits for its worker.
      await pass(1_010)
      await hot.stop()
      Fs.rmSync(dir, { recursive: true, force: true })
      release()
      await pass(100)
      await new Promise((resolve) => setImmediate(resolve))
      expect({ spawned, rejections }).toEqual({ spawned: [], rejections: [] })
    } finally {
      process.off("unhandledRejection", onRejection)
      await hot.stop()
    }
  })
})
