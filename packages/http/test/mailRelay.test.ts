import { MailNotificationsSns, MailTransportOutboxDir, MailTransportSmtp } from "@hostplane/adapters-providers"
import { FakeSmtpServer, type FakeSns, startFakeSns } from "@hostplane/testkit"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { type Suite, unique, useSuite } from "./support/TestServer.ts"

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
    mailTransport: () => MailTransportOutboxDir.layer(dir)
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
    mailTransport: () => MailTransportSmtp.layer({ url: Redacted.make(holder.smtp.url) }),
    mailNotifications: () =>
      MailNotificationsSns.layer({ certsDir: holder.sns.certsDir, confirmVia: holder.sns.confirmVia })
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

  it("inbound mail to an address revoked through the API is recorded as refused and never kept", async () => {
    const { address, base } = await granted(suite)
    expect((await suite.api.delete(base, undefined, { token: suite.admin.token })).status).toBe(204)
    const raw = "From: ann@sender.example\r\nTo: x\r\nSubject: Hi\r\n\r\nhello\r\n"
    const reply = await notify({
      notificationType: "Received",
      mail: { messageId: unique("ses"), source: "ann@sender.example", commonHeaders: { subject: "Hi" } },
      receipt: { recipients: [address], spfVerdict: { status: "PASS" }, action: { type: "SNS", encoding: "UTF8" } },
      content: raw
    })
    expect(reply.status).toBe(200)
    const log = await suite.api.get(`${base}/log?direction=in`, { token: suite.admin.token })
    expect(log.body.items).toEqual([expect.objectContaining({ to: address, outcome: "refused", hasRaw: false })])
    const rawReply = await suite.api.get(`${base}/log/${log.body.items[0].id}/raw`, { token: suite.admin.token })
    expect(rawReply.status).toBe(404)
  })
})
