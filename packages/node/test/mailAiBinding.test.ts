import { AiUpstreamOpenAi, MailTransportOutboxDir } from "@hostplane/adapters-providers"
import { type FakeOpenAi, startFakeOpenAi } from "@hostplane/testkit"
import { Redacted } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { creditOf, orgIdOf, withPolar } from "../../http/test/support/polar.ts"
import { bindingsBundle, callBinding, envOf } from "./support/BindingsWorker.ts"
import { eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"

const mailDomain = "mail.example.test"
const nodeToken = "node-token-bindings-mail-ai"
const outbox = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-node-outbox-"))
afterAll(() => Fs.rmSync(outbox, { recursive: true, force: true }))

const ask = (model = "gpt-4.1", extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "Say hello." }],
  ...extra
})

describe("env.email and env.ai: through the node mail relay and the AI gateway (real workerd)", () => {
  const polar = withPolar()
  const upstream = {} as { fake: FakeOpenAi }
  beforeAll(async () => {
    upstream.fake = await startFakeOpenAi()
  })
  afterAll(() => upstream.fake?.close())
  const suite = useRuntimeSuite(
    { timeoutMs: 20_000 },
    { ...polar.settings, mail: { mailDomain }, node: { token: nodeToken } },
    {
      providers: [
        polar.gateway,
        () => MailTransportOutboxDir.layer(outbox),
        () =>
          AiUpstreamOpenAi.layer({
            url: upstream.fake.url,
            key: Redacted.make(upstream.fake.key),
            timeout: "5 seconds"
          })
      ]
    }
  )
  const admin = () => ({ token: suite.admin.token })
  const call = (hostname: string, binding: string, method: string, args: ReadonlyArray<unknown>) =>
    callBinding(suite.edgeUrl, hostname, binding, method, args)
  const hasKey = (hostname: string, key: string) => async () =>
    (await envOf(suite.edgeUrl, hostname)).keys.includes(key)

  /** A deployed project with the add-on granted, seen by the running worker. */
  const granted = async (addon: "email" | "ai", manifest: Record<string, unknown> = {}) => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bindingsBundle(undefined, manifest))).status).toBe(201)
    expect(await hasKey(project.hostname, addon)()).toBe(false)
    const base = `/v1/orgs/${project.slug}/projects/${project.name}/${addon}`
    const grant = await suite.api.post(base, undefined, admin())
    expect(grant.status).toBe(200)
    return { ...project, base, grant: grant.body }
  }

  const credit = async (slug: string) => {
    const orgId = await orgIdOf(suite.server, slug)
    const reply = await polar.holder.polar.deliver(`${suite.server.url}/v1/hooks/billing`, {
      type: "order.paid",
      data: { id: "ord", customer: { external_id: orgId }, metadata: { kind: "ai_credit", microCents: "500000000" } }
    })
    expect(reply.body).toEqual({ applied: true })
  }

  it("a granted address appears as env.email; send() goes through the relay as the project's address and is logged", async () => {
    const project = await granted("email")
    expect(await eventually(hasKey(project.hostname, "email"), 5_000)).toBe(true)
    const address = project.grant.address as string
    const sent = await call(project.hostname, "email", "send", [
      { to: "zoe@example.com", subject: "Café ☕", text: "Hello from the worker.", html: "<p>Hello</p>" }
    ])
    expect(sent.value).toEqual({ id: expect.stringMatching(/^mail_/), messageId: expect.any(String) })
    const log = await suite.api.get(`${project.base}/log`, admin())
    expect(log.status).toBe(200)
    expect(log.body.items[0]).toMatchObject({ id: sent.value.id, direction: "out", to: "zoe@example.com" })
    const raw = await suite.api.call("GET", `${project.base}/log/${sent.value.id}/raw`, admin())
    const text = typeof raw.body === "string" ? raw.body : JSON.stringify(raw.body)
    expect(text).toContain(`From: ${address}`)
    expect(text).toContain("Subject: =?UTF-8?B?")
    expect(text).toContain("multipart/alternative")
    // A raw message from the project's own address is sent as it is.
    const own = await call(project.hostname, "email", "send", [
      `From: ${address}\r\nTo: amy@example.com\r\nSubject: raw\r\n\r\nBody.\r\n`
    ])
    expect(own.value?.id).toMatch(/^mail_/)
  })

  it("a raw message from another address rejects with from_not_allowed; bad fields reject with bad_request", async () => {
    const project = await granted("email")
    expect(await eventually(hasKey(project.hostname, "email"), 5_000)).toBe(true)
    const forged = await call(project.hostname, "email", "send", [
      "From: ceo@example.com\r\nTo: amy@example.com\r\nSubject: hi\r\n\r\nPay me.\r\n"
    ])
    expect(forged.error?.message).toMatch(/^from_not_allowed: /)
    expect(forged.error?.code).toBe("from_not_allowed")
    for (const bad of [
      {},
      { to: "not an address", subject: "s", text: "t" },
      { to: "a@example.com", subject: "two\r\nBcc: x@example.com", text: "t" },
      { to: "a@example.com", subject: "s" },
      { to: "a@example.com", subject: "s", text: 42 }
    ]) {
      expect((await call(project.hostname, "email", "send", [bad])).error?.message, JSON.stringify(bad)).toMatch(
        /^bad_request: /
      )
    }
    expect((await call(project.hostname, "email", "send", [42])).error?.message).toMatch(/^bad_request: /)
    const oversize = await call(project.hostname, "email", "send", [
      { to: "a@example.com", subject: "big", text: "x".repeat(11 * 1024 * 1024) }
    ])
    expect(oversize.error?.message).toMatch(/^payload_too_large: /)
    const log = await suite.api.get(`${project.base}/log`, admin())
    expect(log.body.items).toEqual([])
  })

  it("the hourly cap applies to the worker's sends: mail_rate_limited", async () => {
    const project = await granted("email")
    expect(await eventually(hasKey(project.hostname, "email"), 5_000)).toBe(true)
    const address = project.grant.address as string
    // The free plan's 50 an hour, taken through the node relay's own route.
    for (let i = 0; i < 50; i++) {
      const reply = await fetch(`${suite.server.url}/v1/node/mail/send`, {
        method: "POST",
        headers: { authorization: `Bearer ${nodeToken}`, "x-project-id": project.id, "content-type": "message/rfc822" },
        body: `From: ${address}\r\nTo: amy@example.com\r\nSubject: ${i}\r\n\r\nx\r\n`
      })
      expect(reply.status).toBe(202)
    }
    const capped = await call(project.hostname, "email", "send", [{ to: "amy@example.com", subject: "s", text: "t" }])
    expect(capped.error?.message).toMatch(/^mail_rate_limited: /)
  })

  it("a revoke takes env.email away at the next convergence, without a redeploy", async () => {
    const project = await granted("email")
    expect(await eventually(hasKey(project.hostname, "email"), 5_000)).toBe(true)
    expect((await suite.api.delete(project.base, undefined, admin())).status).toBe(204)
    expect(await eventually(async () => !(await hasKey(project.hostname, "email")()), 5_000)).toBe(true)
  })

  it("env.ai needs the grant and the deployment's ai: true; chat() answers the completion and writes one ledger call row", async () => {
    const project = await granted("ai", { ai: true })
    expect(await eventually(hasKey(project.hostname, "ai"), 5_000)).toBe(true)
    await credit(project.slug)
    const orgId = await orgIdOf(suite.server, project.slug)
    const calls = async () => (await creditOf(suite.server, orgId)).ledger.filter((row) => row.kind === "call").length
    expect(await calls()).toBe(0)
    const answer = await call(project.hostname, "ai", "chat", [ask()])
    expect(answer.value.choices[0].message.content).toBe("Hello from the fake upstream.")
    expect(await eventually(async () => (await calls()) === 1, 5_000)).toBe(true)
    // The upstream saw the gateway's credentials, never the project's key.
    expect(JSON.stringify(upstream.fake.requests.at(-1))).not.toContain("hp_ai_")

    const withoutFlag = await granted("ai")
    // A grant made after the AI one reaching the worker shows the node has converged on a state holding both: env is
    // made from one project state, so env.ai is absent there because the deployment does not ask for it.
    const email = `/v1/orgs/${withoutFlag.slug}/projects/${withoutFlag.name}/email`
    expect((await suite.api.post(email, undefined, admin())).status).toBe(200)
    expect(await eventually(hasKey(withoutFlag.hostname, "email"), 5_000)).toBe(true)
    expect(await hasKey(withoutFlag.hostname, "ai")()).toBe(false)
  })

  it("gateway refusals reject with the gateway's code; bad bodies with bad_request; a revoke takes env.ai away", async () => {
    const project = await granted("ai", { ai: true })
    expect(await eventually(hasKey(project.hostname, "ai"), 5_000)).toBe(true)
    const broke = await call(project.hostname, "ai", "chat", [ask()])
    expect(broke.error?.message).toMatch(/^insufficient_balance: /)
    expect((await call(project.hostname, "ai", "chat", [ask("no-such-model")])).error?.message).toMatch(
      /^unknown_model: /
    )
    expect((await call(project.hostname, "ai", "chat", ["hello"])).error?.message).toMatch(/^bad_request: /)
    const huge = ask("gpt-4.1", { messages: [{ role: "user", content: "x".repeat(5 * 1024 * 1024) }] })
    expect((await call(project.hostname, "ai", "chat", [huge])).error?.message).toMatch(/^payload_too_large: /)
    expect((await call(project.hostname, "ai", "chat", [ask("gpt-4.1", { stream: true })])).error?.message).toMatch(
      /^bad_request: /
    )
    expect((await suite.api.delete(project.base, undefined, admin())).status).toBe(204)
    expect(await eventually(async () => !(await hasKey(project.hostname, "ai")()), 5_000)).toBe(true)
  })
})
