import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

/**
 * decisions.md part 15: SIGTERM stops the embedded PostgreSQL and exits. A PostgreSQL that is already gone when the
 * stop reaches it (killed, crashed, or stopped by a signal sent to the whole process group once its last client left)
 * must not hold the stop: the server once stayed alive after SIGTERM with no child process left.
 */
describe("SIGTERM after the embedded PostgreSQL is gone", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "hostplane-shutdown-"))
  let child: Awaited<ReturnType<typeof startOnData>>["child"] | undefined

  afterAll(async () => {
    await stopServer(child, "SIGKILL")
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("the server still stops and exits 0", async () => {
    const server = await startOnData(dataDir, { SERVICE_WORKERS: "off", SERVICE_DNS_LISTEN: "off" })
    child = server.child
    // The postmaster's pid is the first line of its lock file.
    const postmaster = Number(readFileSync(join(dataDir, "pg", "data", "postmaster.pid"), "utf8").split("\n")[0])
    expect(postmaster).toBeGreaterThan(0)
    process.kill(postmaster, "SIGKILL")
    for (;;) {
      try {
        process.kill(postmaster, 0)
      } catch {
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      server.child.once("exit", (code, signal) => resolve({ code, signal }))
    )
    server.child.kill("SIGTERM")
    expect(await exited).toEqual({ code: 0, signal: null })
    expect(server.output()).not.toContain("hostplane stopped on an error")
  }, 180_000)
})

/**
 * decisions.md part 15: a stream a client keeps open (a log follower) does not hold the stop: it ends, whole, once the
 * stop begins, long before the shutdown timeout (here longer than the test's own).
 */
describe("SIGTERM with a log stream open", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "hostplane-shutdown-stream-"))
  let child: Awaited<ReturnType<typeof startOnData>>["child"] | undefined

  afterAll(async () => {
    await stopServer(child, "SIGKILL")
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("the server still stops and exits 0, ending the stream", async () => {
    const server = await startOnData(dataDir, {
      SERVICE_WORKERS: "off",
      SERVICE_DNS_LISTEN: "off",
      SERVICE_SHUTDOWN_TIMEOUT: "10 minutes"
    })
    child = server.child
    const { call, token } = await signIn(server.base, "shutdown-follower")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "followed" })).status).toBe(201)
    const stream = await fetch(`${server.base}/v1/orgs/${slug}/projects/followed/logs/stream`, {
      headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }
    })
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    const ended = (async () => {
      try {
        for (;;) if ((await reader.read()).done) return "ended"
      } catch {
        return "cut"
      }
    })()
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      server.child.once("exit", (code, signal) => resolve({ code, signal }))
    )
    server.child.kill("SIGTERM")
    expect(await exited).toEqual({ code: 0, signal: null })
    expect(await ended).toBe("ended")
  }, 180_000)
})
