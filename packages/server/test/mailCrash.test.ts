import { FakeSmtpServer } from "@hostplane/testkit"
import { Effect, Exit, Scope } from "effect"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

const nodeToken = "node-token-for-mail-crash"
const mailDomain = "mail.crash.test"

/**
 * A relayed message in flight when its server is SIGKILLed leaves its hourly-cap slot held (the `out` row
 * taken before the transport is called). That slot is leased (`SERVICE_MAIL_RELAY_LEASE`, 30 s unless set; 5 s here
 * so the test waits seconds) and renewed only by the process sending, so once the lease has ended the project's next
 * send takes the slot back, instead of a 429 for the rest of the hour.
 */
describe("a relayed message across a server crash", () => {
  let dataDir: string
  let base: string
  let server: ChildProcess | undefined
  const smtpScope = Effect.runSync(Scope.make())
  let smtp: FakeSmtpServer["Service"]

  const start = async () => {
    ;({ base, child: server } = await startOnData(
      dataDir,
      {
        SERVICE_NODE_TOKEN: nodeToken,
        SERVICE_MAIL_DOMAIN: mailDomain,
        SERVICE_SMTP_URL: smtp.url,
        SERVICE_MAIL_RELAY_LEASE: "5 seconds"
      },
      // A restart first stops the killed server's orphaned PostgreSQL: slow on a loaded machine.
      1_200
    ))
  }

  const stop = (signal: NodeJS.Signals) => stopServer(server, signal)

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-mail-crash-"))
    smtp = await Effect.runPromise(Scope.provide(FakeSmtpServer.make(), smtpScope))
    await start()
  }, 360_000)
  afterAll(async () => {
    await stop("SIGTERM")
    await Effect.runPromise(Scope.close(smtpScope, Exit.void))
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("SIGKILL while the SMTP server holds the 50th message, restart: the held slot frees once its lease ends", async () => {
    const { call } = await signIn(() => base, "mail-crasher")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    expect((await call("POST", `/v1/orgs/${slug}/projects`, { name: "crashmail" })).status).toBe(201)
    const email = `/v1/orgs/${slug}/projects/crashmail/email`
    const granted = await call("POST", email)
    expect(granted.status).toBe(200)
    const address = granted.body.address as string
    const projectId = (await call("GET", `/v1/orgs/${slug}/projects/crashmail`)).body.id as string
    const relay = () =>
      fetch(`${base}/v1/node/mail/send`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${nodeToken}`,
          "content-type": "message/rfc822",
          "x-project-id": projectId
        },
        body: `From: ${address}\r\nTo: zoe@example.com\r\nSubject: hi\r\n\r\nHello.\r\n`
      }).then(async (reply) => ({ status: reply.status, body: (await reply.json()) as any }))

    // 49 of the free plan's 50 an hour.
    for (let i = 0; i < 49; i++) expect((await relay()).status).toBe(202)
    // The 50th: the SMTP server takes its data and never answers, and the server dies waiting.
    await Effect.runPromise(smtp.holdNext(1))
    const stuck = relay().catch(() => undefined)
    await expect.poll(async () => (await Effect.runPromise(smtp.held)).length, { timeout: 30_000 }).toBe(1)
    await stop("SIGKILL")
    await stuck

    await start()
    // The killed process's slot stops counting once its lease (never renewed after the kill) has ended.
    await expect.poll(async () => (await relay()).status, { timeout: 120_000, interval: 500 }).toBe(202)
    const capped = await relay()
    expect({ status: capped.status, code: capped.body.code }).toEqual({ status: 429, code: "mail_rate_limited" })
    expect((await call("GET", email)).body.sent24h).toBe(50)
  }, 600_000)
})
