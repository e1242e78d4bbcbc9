import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type FakeNameCom, startFakeNameCom } from "@hostplane/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

const contact = {
  name: "Ada Lovelace",
  email: "ada@example.test",
  phone: "+44.2079460958",
  address1: "12 St James's Square",
  city: "London",
  postalCode: "SW1Y 4JH",
  country: "GB"
}

/**
 * A purchase whose server is SIGKILLed mid-saga (the registrar bought the name, its answer never came) is finished by
 * the server started again on the same data, and the name is bought once: the restarted runner takes the job over
 * (its owner's session lock died with the process) and looks the name up before buying.
 */
describe("a domain purchase across a server crash", () => {
  let registrar: FakeNameCom
  let dataDir: string
  let base: string
  let server: ChildProcess | undefined

  const start = async () => {
    ;({ base, child: server } = await startOnData(
      dataDir,
      {
        SERVICE_REGISTRAR_URL: registrar.url,
        SERVICE_REGISTRAR_USERNAME: registrar.username,
        SERVICE_REGISTRAR_TOKEN: registrar.token,
        SERVICE_REGISTRAR_TIMEOUT: "120 seconds"
      },
      360
    ))
  }

  const kill = () => stopServer(server, "SIGKILL")

  beforeAll(async () => {
    registrar = await startFakeNameCom()
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-domains-crash-"))
    await start()
  }, 120_000)
  afterAll(async () => {
    server?.kill("SIGKILL")
    await registrar?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("SIGKILL after the registrar bought the name, restart: the domain becomes active, bought once", async () => {
    const { headers } = await signIn(base, "crash-buyer")
    const me = await fetch(`${base}/v1/me`, { headers }).then(
      (r) => r.json() as Promise<{ orgs: Array<{ slug: string }> }>
    )
    const domains = `/v1/orgs/${me.orgs[0]!.slug}/domains`
    const name = "crash-test.example"
    registrar.failNext(/^POST \/v4\/domains$/, { stall: true })
    const pending = fetch(`${base}${domains}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name, contact })
    }).catch(() => "connection lost")
    await expect.poll(() => registrar.account.creates.length, { timeout: 20_000 }).toBe(1)
    await kill()
    expect(await pending).toBe("connection lost")

    await start()
    const detail = async () =>
      (await fetch(`${base}${domains}/${name}`, { headers })).json() as Promise<{ status: string }>
    await expect.poll(async () => (await detail()).status, { timeout: 30_000, interval: 500 }).toBe("active")
    expect(registrar.account.creates.map((c) => c.domainName)).toEqual([name])
    const resent = await fetch(`${base}${domains}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name, contact })
    })
    expect(resent.status).toBe(200)
    expect(registrar.account.creates).toHaveLength(1)
  }, 180_000)
})
