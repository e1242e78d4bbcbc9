import { MailNotificationsSns, MailTransportOutboxDir, MailTransportSmtp } from "@hostplane/adapters-providers"
import { Email, Jobs, Kernel, Mail } from "@hostplane/core"
import { FakeSmtpServer, type FakeSns, startFakeSns } from "@hostplane/testkit"
import { Duration, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { type Suite, type TestServer, unique, useSuite } from "./support/TestServer.ts"

const mailDomain = "mail.example.test"
const nodeToken = "node-token-mail-51c"

const encoder = new TextEncoder()

/** A message as a node's worker would hand it over; `extra` header lines go before the body. */
const messageFrom = (from: string, extra: ReadonlyArray<string> = ["To: Zoe <zoe@example.com>"], body = "Hi.\r\n") =>
  encoder.encode([`From: Site <${from}>`, ...extra, "Subject: =?UTF-8?B?Q2Fmw6k=?=", "", body].join("\r\n"))

const relay = async (
  suite: Suite,
  body: Uint8Array,
  options: { projectId?: string; token?: string; contentType?: string } = {}
) => {
  const headers: Record<string, string> = { "content-type": options.contentType ?? "message/rfc822" }
  if (options.token !== "") headers.authorization = `Bearer ${options.token ?? nodeToken}`
  if (options.projectId !== undefined) headers["x-project-id"] = options.projectId
  const response = await fetch(`${suite.server.url}/v1/node/mail/send`, { method: "POST", headers, body })
  const text = await response.text()
  const json = (response.headers.get("content-type") ?? "").includes("json") && text !== "" ? JSON.parse(text) : text
  return { status: response.status, body: json }
}

/** A project with email granted through the API, and its address. */
const granted = async (suite: Suite, grant = true) => {
  const slug = await suite.newOrg()
  const project = await suite.newProject(slug)
  const base = `/v1/orgs/${slug}/projects/${project.name}/email`
  if (grant) expect((await suite.api.post(base, undefined, { token: suite.admin.token })).status).toBe(200)
  return { slug, project, base, address: `${project.name}.${slug}@${mailDomain}` }
}

const outboxDir = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-relay-outbox-"))
  afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

describe.each(backends)("decisions.md part 6 node mail relay (%s)", (_name, stores) => {
  const dir = outboxDir()
  const suite = useSuite(stores, { mail: { mailDomain }, node: { token: nodeToken } }, undefined, undefined, {
    providers: [() => MailTransportOutboxDir.layer(dir)]
  })

  it("202 { id, messageId }: the message reaches the outbox byte for byte and an out row keeps it", async () => {
    const { project, base, address } = await granted(suite)
    const messageId = `${unique("m")}@app.example`
    const body = new Uint8Array([
      ...messageFrom(address, [
        "To: Zoe <zoe@example.com>, ann@example.com",
        "Cc: bob@example.com",
        `Message-ID: <${messageId}>`
      ]),
      0xff,
      0x0d,
      0x0a
    ])
    const reply = await relay(suite, body, { projectId: project.id })
    expect(reply).toEqual({ status: 202, body: { id: expect.stringMatching(/^mail_/), messageId } })
    expect(new Uint8Array(Fs.readFileSync(Path.join(dir, `${reply.body.id}.eml`)))).toEqual(body)
    const token = suite.admin.token
    const entry = await suite.api.get(`${base}/log/${reply.body.id}`, { token })
    expect(entry.body).toEqual({
      id: reply.body.id,
      direction: "out",
      from: `Site <${address}>`,
      to: "zoe@example.com, ann@example.com, bob@example.com",
      subject: "Café",
      outcome: "sent",
      size: body.length,
      spf: null,
      hasRaw: true,
      createdAt: expect.any(String)
    })
    const raw = await fetch(`${suite.server.url}${base}/log/${reply.body.id}/raw`, {
      headers: { authorization: `Bearer ${token}` }
    })
    expect(new Uint8Array(await raw.arrayBuffer())).toEqual(body)
    expect((await suite.api.get(base, { token })).body).toMatchObject({ sent24h: 1, received24h: 0 })
  })

  it("a message without Message-ID is named by the log row's id", async () => {
    const { project, address } = await granted(suite)
    const reply = await relay(suite, messageFrom(address), { projectId: project.id })
    expect(reply.status).toBe(202)
    expect(reply.body.messageId).toBe(reply.body.id)
  })

  it("a missing or wrong node token is 401, checked before anything else", async () => {
    for (const token of ["", "wrong"]) {
      const reply = await relay(suite, encoder.encode("junk"), { token })
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 401, code: "unauthorized" })
    }
  })

  it("no X-Project-Id, an empty body or a malformed message is 400 and sends nothing", async () => {
    const { project, address, base } = await granted(suite)
    const cases: ReadonlyArray<readonly [Uint8Array, string | undefined]> = [
      [messageFrom(address), undefined],
      [new Uint8Array(), project.id],
      [encoder.encode("no header here\r\n\r\nbody"), project.id],
      [encoder.encode("To: zoe@example.com\r\n\r\nno From"), project.id],
      [messageFrom(address, ["From: other@example.com", "To: zoe@example.com"]), project.id],
      [messageFrom(address, ["To: zoe@example.com", "Bcc: hidden@example.com"]), project.id],
      [messageFrom(address, []), project.id],
      [messageFrom(address, ["To: not an address"]), project.id],
      [
        messageFrom(address, [`To: ${Array.from({ length: 51 }, (_, i) => `r${i}@example.com`).join(", ")}`]),
        project.id
      ]
    ]
    for (const [body, projectId] of cases) {
      const reply = await relay(suite, body, projectId === undefined ? {} : { projectId })
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: "bad_request" })
    }
    const log = await suite.api.get(`${base}/log`, { token: suite.admin.token })
    expect(log.body.items).toEqual([])
  })

  it("another content type is 415; a body over 10 MiB is 413 payload_too_large", async () => {
    const { project, address } = await granted(suite)
    const wrongType = await relay(suite, messageFrom(address), { projectId: project.id, contentType: "text/plain" })
    expect(wrongType.status).toBe(415)
    const big = new Uint8Array(10 * 1024 * 1024 + 1).fill(0x61)
    big.set(messageFrom(address))
    const tooBig = await relay(suite, big, { projectId: project.id })
    expect({ status: tooBig.status, code: tooBig.body.code }).toEqual({ status: 413, code: "payload_too_large" })
  })

  it("an unknown project is 404; email not granted (never, or revoked) is 404 not_granted", async () => {
    const unknown = await relay(suite, messageFrom(`x@${mailDomain}`), { projectId: "prj_unknown" })
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 404, code: "not_found" })
    const never = await granted(suite, false)
    const off = await relay(suite, messageFrom(never.address), { projectId: never.project.id })
    expect({ status: off.status, code: off.body.code }).toEqual({ status: 404, code: "not_granted" })
    const revoked = await granted(suite)
    expect((await suite.api.delete(revoked.base, undefined, { token: suite.admin.token })).status).toBe(204)
    const after = await relay(suite, messageFrom(revoked.address), { projectId: revoked.project.id })
    expect({ status: after.status, code: after.body.code }).toEqual({ status: 404, code: "not_granted" })
  })

  it("a From other than the project's address is 403, even another project's address", async () => {
    const { project } = await granted(suite)
    const other = await granted(suite)
    for (const from of [other.address, "someone@example.com"]) {
      const reply = await relay(suite, messageFrom(from), { projectId: project.id })
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 403, code: "forbidden" })
    }
  })

  it("the free plan's hourly cap (50) holds under 60 concurrent sends: 50 are 202, 10 are 429 mail_rate_limited", async () => {
    const { project, address, base } = await granted(suite)
    const replies = await Promise.all(
      Array.from({ length: 60 }, () => relay(suite, messageFrom(address), { projectId: project.id }))
    )
    const statuses = replies.map((reply) => reply.status)
    expect(statuses.filter((status) => status === 202)).toHaveLength(50)
    const limited = replies.filter((reply) => reply.status === 429)
    expect(limited).toHaveLength(10)
    expect(limited[0]!.body).toMatchObject({ code: "mail_rate_limited", details: { hourlyCap: 50 } })
    const status = await suite.api.get(base, { token: suite.admin.token })
    expect(status.body.sent24h).toBe(50)
  })

  it("the node state's email binding is { address, from, hourlyCap } while granted, null after a revoke", async () => {
    const start = (await suite.api.get("/v1/node/state", { token: nodeToken })).body.revision as number
    const { project, address, base } = await granted(suite)
    const state = await suite.api.get(`/v1/node/state?after=${start}`, { token: nodeToken })
    const entry = state.body.projects.find((p: { projectId: string }) => p.projectId === project.id)
    expect(entry.bindings.email).toEqual({ address, from: address, hourlyCap: 50 })
    await suite.api.delete(base, undefined, { token: suite.admin.token })
    const after = await suite.api.get(`/v1/node/state?after=${state.body.revision}`, { token: nodeToken })
    const revoked = after.body.projects.find((p: { projectId: string }) => p.projectId === project.id)
    expect(revoked.bindings.email).toBeNull()
  })
})

/** An `out` row of `projectId` as the relay leaves it, `minutesAgo` old. */
const outRow = (projectId: string, minutesAgo: number): Email.MailLogRow => ({
  id: Kernel.makeId("mail", `mail_${unique("held").slice(5)}`),
  projectId: projectId as Kernel.ProjectId,
  direction: "out",
  from: "app@x.test",
  to: "zoe@example.com",
  subject: "earlier",
  outcome: "sent",
  size: 5,
  spf: null,
  hasRaw: true,
  createdAt: new Date(Date.now() - minutesAgo * 60_000).toISOString(),
  providerMessageId: null,
  raw: encoder.encode("x\r\n\r\nx")
})

const emailStore = <A>(server: TestServer, use: (store: Email.EmailStore["Service"]) => Effect.Effect<A>) =>
  server.run(Effect.flatMap(Email.EmailStore, use))

/** 49 sends of the last hour (the free cap is 50), logged as the relay logs them. */
const sentBefore = (server: TestServer, projectId: string) =>
  emailStore(server, (store) =>
    Effect.forEach(
      Array.from({ length: 49 }, (_, i) => outRow(projectId, 10 + i / 10)),
      store.insertLog,
      {
        discard: true
      }
    )
  )

/** A transport that holds the first message until `release` (later ones pass), counting arrivals in `entered`. */
const heldTransport = () => {
  const gate = { entered: 0, release: () => {}, held: Promise.resolve() }
  gate.held = new Promise<void>((resolve) => (gate.release = resolve))
  const layer = Layer.succeed(
    Mail.MailTransport,
    Mail.MailTransport.of({
      send: () => Effect.void,
      sendRaw: (message) =>
        Effect.promise(() => {
          gate.entered += 1
          return gate.entered === 1 ? gate.held : Promise.resolve()
        }).pipe(Effect.as(message.messageId ?? message.id))
    })
  )
  return { gate, layer }
}

describe.each(backends)("the relay's held slot of a process that stopped (%s)", (name, stores) => {
  const dir = outboxDir()
  const suite = useSuite(stores, { mail: { mailDomain }, node: { token: nodeToken } }, undefined, undefined, {
    providers: [() => MailTransportOutboxDir.layer(dir)]
  })

  it("a held slot whose lease ended (its process died mid-send) stops counting at once: the next send takes it, the row goes", async () => {
    const { project, address, base } = await granted(suite)
    await sentBefore(suite.server, project.id)
    // What a process SIGKILLed mid-send two minutes ago left: a held row leased for 30 s, never renewed since.
    const dead = outRow(project.id, 2)
    const reserved = await emailStore(suite.server, (store) =>
      store.reserveOut(dead, {
        since: new Date(Date.now() - 3_600_000).toISOString(),
        cap: 50,
        now: dead.createdAt,
        leaseUntil: new Date(Date.parse(dead.createdAt) + 30_000).toISOString()
      })
    )
    expect(reserved).toBe("reserved")
    // Before leases, that row held the 50th slot for an hour: this send was 429.
    const sent = await relay(suite, messageFrom(address), { projectId: project.id })
    expect(sent.status).toBe(202)
    const capped = await relay(suite, messageFrom(address), { projectId: project.id })
    expect({ status: capped.status, code: capped.body.code }).toEqual({ status: 429, code: "mail_rate_limited" })
    expect((await suite.api.get(base, { token: suite.admin.token })).body.sent24h).toBe(50)
    // The dead row is gone, not merely skipped: nothing renews or shows it.
    expect(await emailStore(suite.server, (store) => store.renewOut(dead.id, new Date().toISOString()))).toBe(false)
    expect(Option.isNone(await emailStore(suite.server, (store) => store.getLog(project.id, dead.id)))).toBe(true)
  })

  it("a held slot whose lease still runs (a send in flight on another replica) counts: 429 at the cap", async () => {
    const { project, address } = await granted(suite)
    await sentBefore(suite.server, project.id)
    const inFlight = outRow(project.id, 0)
    await emailStore(suite.server, (store) =>
      store.reserveOut(inFlight, {
        since: new Date(Date.now() - 3_600_000).toISOString(),
        cap: 50,
        now: inFlight.createdAt,
        leaseUntil: new Date(Date.now() + 30_000).toISOString()
      })
    )
    const capped = await relay(suite, messageFrom(address), { projectId: project.id })
    expect({ status: capped.status, code: capped.body.code }).toEqual({ status: 429, code: "mail_rate_limited" })
  })

  it("the hourly mail_log_purge job also deletes held rows whose lease ended, of projects that send nothing more", async () => {
    const { project } = await granted(suite)
    const dead = outRow(project.id, 3)
    const live = outRow(project.id, 0)
    const limit = (at: string, leaseUntil: string) => ({
      since: new Date(Date.now() - 3_600_000).toISOString(),
      cap: 50,
      now: at,
      leaseUntil
    })
    await emailStore(suite.server, (store) =>
      Effect.all([
        store.reserveOut(dead, limit(dead.createdAt, new Date(Date.parse(dead.createdAt) + 30_000).toISOString())),
        store.reserveOut(live, limit(live.createdAt, new Date(Date.now() + 30_000).toISOString()))
      ])
    )
    await suite.server.run(Jobs.JobRunner.runOnce([Email.mailPurgeHandler]))
    expect(await emailStore(suite.server, (store) => store.renewOut(dead.id, new Date().toISOString()))).toBe(false)
    expect(
      await emailStore(suite.server, (store) => store.renewOut(live.id, new Date(Date.now() + 30_000).toISOString()))
    ).toBe(true)
  })

  if (name === "postgres") {
    const held = heldTransport()
    // A short lease (SERVICE_MAIL_RELAY_LEASE) so the wait past it is seconds; the renewals keep their third of it.
    const relayLease = Duration.seconds(6)
    const slow = useSuite(
      stores,
      { mail: { mailDomain, relayLease }, node: { token: nodeToken } },
      undefined,
      undefined,
      { providers: [() => held.layer] }
    )

    it("a send the transport holds past the first lease keeps its slot: the relay renews the lease while it waits", async () => {
      const { project, address, base } = await granted(slow)
      await sentBefore(slow.server, project.id)
      const first = relay(slow, messageFrom(address), { projectId: project.id })
      await expect.poll(() => held.gate.entered, { timeout: 10_000 }).toBe(1)
      // Past the lease the slot was first taken for, by a third of it.
      await new Promise((resolve) => setTimeout(resolve, Duration.toMillis(relayLease) * (4 / 3)))
      const capped = await relay(slow, messageFrom(address), { projectId: project.id })
      expect({ status: capped.status, code: capped.body.code }).toEqual({ status: 429, code: "mail_rate_limited" })
      held.gate.release()
      expect((await first).status).toBe(202)
      expect((await slow.api.get(base, { token: slow.admin.token })).body.sent24h).toBe(50)
    }, 90_000)
  }
})

describe("decisions.md part 6 node mail relay, switched off", () => {
  const withoutToken = useSuite(backends[1]![1], { mail: { mailDomain } })
  const withoutTransport = useSuite(backends[1]![1], { mail: { mailDomain }, node: { token: nodeToken } })

  it("without SERVICE_NODE_TOKEN the relay is 501 node_api_off", async () => {
    const reply = await relay(withoutToken, messageFrom(`x@${mailDomain}`), { projectId: "prj_x" })
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 501, code: "node_api_off" })
  })

  it("a host that gave the services no mail transport answers 503 mail_unavailable", async () => {
    const { project, address } = await granted(withoutTransport)
    const reply = await relay(withoutTransport, messageFrom(address), { projectId: project.id })
    expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 503, code: "mail_unavailable" })
  })
})

describe.each(backends)("node mail relay over SES's SMTP interface, and SNS events (%s)", (_name, stores) => {
  const holder = {} as { sns: FakeSns; smtp: FakeSmtpServer["Service"]; scope: Scope.Closeable }
  const topicArn = `arn:aws:sns:us-east-1:123456789012:${unique("mail")}`
  beforeAll(async () => {
    holder.sns = await startFakeSns({ topicArn })
    holder.scope = Effect.runSync(Scope.make())
    holder.smtp = await Effect.runPromise(Scope.provide(FakeSmtpServer.make(), holder.scope))
  })
  afterAll(async () => {
    await holder.sns?.close()
    if (holder.scope !== undefined) await Effect.runPromise(Scope.close(holder.scope, Exit.void))
  })
  const suite = useSuite(stores, { mail: { mailDomain, topicArn }, node: { token: nodeToken } }, undefined, undefined, {
    providers: [
      () => MailTransportSmtp.layer({ url: Redacted.make(holder.smtp.url) }),
      () => MailNotificationsSns.layer({ certsDir: holder.sns.certsDir, confirmVia: holder.sns.confirmVia })
    ]
  })
  const notify = (message: unknown) =>
    suite.api.post("/v1/hooks/mailer", undefined, {
      raw: JSON.stringify(holder.sns.notification(message)),
      headers: { "content-type": "text/plain; charset=UTF-8" }
    })

  it("relay -> SES's 250 id as messageId -> SNS Delivery, Bounce, Complaint update that out row", async () => {
    const { project, address, base } = await granted(suite)
    const body = messageFrom(address, ["To: zoe@example.com", "Message-ID: <header-id@app.example>"])
    const reply = await relay(suite, body, { projectId: project.id })
    expect(reply.status).toBe(202)
    const received = (await Effect.runPromise(holder.smtp.received)).at(-1)!
    expect(reply.body.messageId).toBe(received.messageId)
    expect(received.bytes).toEqual(body)
    expect(received).toMatchObject({ from: address, to: ["zoe@example.com"] })
    const token = suite.admin.token
    for (const [type, outcome] of [
      ["Delivery", "delivered"],
      ["Bounce", "bounced"],
      ["Complaint", "complained"]
    ] as const) {
      const event = await notify({ notificationType: type, mail: { messageId: reply.body.messageId } })
      expect(event.status).toBe(200)
      expect((await suite.api.get(`${base}/log/${reply.body.id}`, { token })).body.outcome).toBe(outcome)
    }
  })

  it("a refusal by the SMTP server is 502 mail_send_failed, logs nothing and uses no slot", async () => {
    const { project, address, base } = await granted(suite)
    await Effect.runPromise(holder.smtp.failNext(1, { code: 554, message: "Message rejected: not verified" }))
    const reply = await relay(suite, messageFrom(address), { projectId: project.id })
    expect(reply.body).toMatchObject({ code: "mail_send_failed", details: { retryable: false } })
    expect(reply.status).toBe(502)
    expect((await suite.api.get(`${base}/log`, { token: suite.admin.token })).body.items).toEqual([])
    expect((await suite.api.get(base, { token: suite.admin.token })).body.sent24h).toBe(0)
  })

  it("a grant through the API turns receiving on with sending; after the revoke inbound mail is refused and never kept", async () => {
    const { address, base } = await granted(suite)
    const token = suite.admin.token
    const raw = "From: ann@sender.example\r\nTo: x\r\nSubject: Hi\r\n\r\nhello\r\n"
    const inbound = () =>
      notify({
        notificationType: "Received",
        mail: { messageId: unique("ses"), source: "ann@sender.example", commonHeaders: { subject: "Hi" } },
        receipt: { recipients: [address], spfVerdict: { status: "PASS" }, action: { type: "SNS", encoding: "UTF8" } },
        content: raw
      })
    expect((await inbound()).status).toBe(200)
    const received = await suite.api.get(`${base}/log?direction=in`, { token })
    expect(received.body.items).toEqual([expect.objectContaining({ to: address, outcome: "received", hasRaw: true })])
    expect((await suite.api.get(base, { token })).body.received24h).toBe(1)

    expect((await suite.api.delete(base, undefined, { token })).status).toBe(204)
    expect((await inbound()).status).toBe(200)
    const log = await suite.api.get(`${base}/log?direction=in`, { token })
    expect(log.body.items.map((row: any) => [row.to, row.outcome, row.hasRaw]).sort()).toEqual([
      [address, "received", true],
      [address, "refused", false]
    ])
    const refused = log.body.items.find((row: any) => row.outcome === "refused")
    const rawReply = await suite.api.get(`${base}/log/${refused.id}/raw`, { token })
    expect(rawReply.status).toBe(404)
  })
})
