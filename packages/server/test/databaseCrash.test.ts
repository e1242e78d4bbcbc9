import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signIn, startOnData, stopServer } from "./support/ServerProcess.ts"
import { type Connect, psql } from "./support/Probes.ts"

/**
 * A restore whose server is SIGKILLed in its sealing phase (its base backup started, the WAL slot taken) is
 * resumed by the server started again on the same data, at the sealing phase, and finishes; the database then holds
 * exactly the chosen generation. `SERVICE_DB_TEST_SEALING_DELAY` holds the sealing backup open long enough to kill.
 */
describe("a database restore across a server crash", () => {
  let dataDir: string
  let base: string
  let server: ChildProcess | undefined

  let stopping = false
  /** `sealingDelay` holds the first run's sealing open for the kill; the restarted server seals without it. */
  const start = async (sealingDelay: string) => {
    const started = await startOnData(
      dataDir,
      {
        // No grid boundary during the test: the generations are the baseline and what the restore seals.
        SERVICE_DB_BACKUP_INTERVAL: "1000 days",
        SERVICE_DB_TEST_SEALING_DELAY: sealingDelay
      },
      // About 190 s of refused polls: at load 8 a first start (initdb, migrations) once took over the 94 s of 360.
      720
    )
    base = started.base
    server = started.child
    stopping = false
    // A server that dies on its own is the failure to explain: its last lines go to the test's output.
    started.child.once("exit", (code, signal) => {
      if (!stopping)
        console.error(`the server exited by itself (${signal ?? code}):\n${started.output().slice(-20_000)}`)
    })
  }

  const stop = (signal: NodeJS.Signals) => {
    stopping = true
    return stopServer(server, signal)
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-db-crash-"))
    await start("6 seconds")
  }, 240_000)
  afterAll(async () => {
    // A graceful stop ends the clusters the server runs (the killed one's were taken over at the restart).
    await stop("SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("SIGKILL while sealing, restart: the operation resumes at sealing and ends done with the generation's rows", async () => {
    const { call } = await signIn(() => base, "crash-restorer")
    const me = await call("GET", "/v1/me")
    const slug = me.body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "crashdb" })).status).toBe(201)
    const path = `/v1/orgs/${slug}/projects/crashdb/database`
    const created = await call("POST", path)
    expect(created.status).toBe(200)
    const db = created.body as Connect
    // Written after the baseline (1/1): gone once the restore to 1/1 finishes.
    expect((await psql(db, "create table after_baseline (n int); insert into after_baseline values (1)")).ok).toBe(true)

    const started = await call("POST", `${path}/restore`, { epoch: 1, seq: 1 })
    expect(started.status).toBe(202)
    const operation = async () => (await call("GET", `${path}/operations/${started.body.operationId}`)).body
    await expect.poll(async () => (await operation()).phase, { timeout: 60_000, interval: 200 }).toBe("sealing")
    // Inside the held-open backup (6 s): started, not yet written.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(await operation()).toMatchObject({ phase: "sealing", terminalCode: null })
    await stop("SIGKILL")

    await start("0 seconds")
    const restarted = Date.now()
    expect(await operation()).toMatchObject({ phase: "sealing", terminalCode: null })
    await expect.poll(async () => (await operation()).terminalCode, { timeout: 90_000, interval: 500 }).toBe("done")
    const took = Date.now() - restarted
    expect(await operation()).toMatchObject({ kind: "restore_generation", phase: "reactivation" })
    // The repeated sealing phase plus the restore: well under a minute.
    expect(took).toBeLessThan(60_000)
    expect(await psql(db, "select to_regclass('after_baseline') is null")).toEqual({ ok: true, out: "t" })
    expect((await psql(db, "create table later (n int)")).ok).toBe(true)
    const generations = (await call("GET", `${path}/generations`)).body.items as Array<{ epoch: number; seq: number }>
    // One sealed generation only: the killed attempt recorded none.
    expect(generations.map((g) => [g.epoch, g.seq])).toEqual([
      [1, 2],
      [1, 1]
    ])
    const notices = (await call("GET", `/v1/orgs/${slug}/notifications`)).body.items
    expect(notices[0]).toMatchObject({ kind: "restore", projectName: "crashdb" })
  }, 300_000)
})
