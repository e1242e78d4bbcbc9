import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { startOnData, stopServer } from "./support/ServerProcess.ts"

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
