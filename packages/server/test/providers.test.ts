import { mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  bundleOf,
  FakeIdentityProvider,
  type FakeNameCom,
  type FakeOpenAi,
  type FakePolar,
  FakeSmtpServer,
  type FakeSns,
  manifestEntry,
  startFakeNameCom,
  startFakeOpenAi,
  startFakePolar,
  startFakeSns
} from "@hostplane/testkit"
import { Effect, Exit, ManagedRuntime, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

const nodeToken = "node-token-for-the-providers-test"
const proProduct = "prod_pro_providers"
const topicArn = "arn:aws:sns:us-east-1:123456789012:hostplane-providers"

/**
 * The server built from settings with every provider group set, as an operator configures them: each one is proven
 * used through HTTP. A provider wired beside the services instead of under them (how OAuth sign-in broke) fails here.
 */
describe("the server built from settings uses every configured provider and the plan numbers it is given", () => {
  let idp: ManagedRuntime.ManagedRuntime<FakeIdentityProvider, never>
  let fakeIdp: FakeIdentityProvider["Service"]
  const smtpScope = Effect.runSync(Scope.make())
  let smtp: FakeSmtpServer["Service"]
  let polar: FakePolar
  let registrar: FakeNameCom
  let sns: FakeSns
  let upstream: FakeOpenAi
  let server: ServerProcess
  let base: string
  let edgePort: number
  let dataDir: string
  let session: Awaited<ReturnType<typeof signIn>>
  let slug: string

  beforeAll(async () => {
    idp = ManagedRuntime.make(FakeIdentityProvider.layer())
    fakeIdp = await idp.runPromise(Effect.service(FakeIdentityProvider))
    smtp = await Effect.runPromise(Scope.provide(FakeSmtpServer.make(), smtpScope))
    polar = await startFakePolar({ products: { [proProduct]: { recurring: true, price: "fixed" } } })
    registrar = await startFakeNameCom()
    sns = await startFakeSns({ topicArn })
    upstream = await startFakeOpenAi()
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-providers-"))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(base, {
      SERVICE_DATA_DIR: dataDir,
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${(edgePort = await freePort())}`,
      SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_PUBLIC_URL: base,
      DATABASE_URL: "",
      SERVICE_NODE_TOKEN: nodeToken,
      SERVICE_OAUTH_REDIRECTS: "http://app.test/",
      SERVICE_IDP_AUTHORIZE_URL: fakeIdp.authorizeUrl,
      SERVICE_IDP_TOKEN_URL: fakeIdp.tokenUrl,
      SERVICE_IDP_USERINFO_URL: fakeIdp.userinfoUrl,
      SERVICE_IDP_CLIENT_ID: fakeIdp.clientId,
      SERVICE_IDP_CLIENT_SECRET: fakeIdp.clientSecret ?? "",
      SERVICE_SMTP_URL: smtp.url,
      SERVICE_POLAR_URL: polar.url,
      SERVICE_POLAR_TOKEN: polar.token,
      SERVICE_POLAR_PRO_PRODUCT: proProduct,
      SERVICE_BILLING_WEBHOOK_SECRET: polar.webhookSecret,
      SERVICE_REGISTRAR_URL: registrar.url,
      SERVICE_REGISTRAR_USERNAME: registrar.username,
      SERVICE_REGISTRAR_TOKEN: registrar.token,
      SERVICE_MAIL_TOPIC_ARN: topicArn,
      SERVICE_MAIL_SNS_CERTS: sns.certsDir,
      SERVICE_MAIL_SNS_CONFIRM_VIA: sns.confirmVia,
      SERVICE_AI_UPSTREAM_URL: upstream.url,
      SERVICE_AI_UPSTREAM_KEY: upstream.key,
      SERVICE_PLAN_LIMITS: JSON.stringify({
        free: { projectLimit: 4, storageQuotaBytes: 1048576, mailHourlyCap: 5, ai: { requestsPerMinute: 7 } },
        pro: { mailKeepDays: 400 }
      })
    })
    session = await signIn(base, "provider-user")
    slug = (await session.call("GET", "/v1/me")).body.orgs[0].slug
  }, 180_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGKILL")
    await Promise.all([idp?.dispose(), polar?.close(), registrar?.close(), sns?.close(), upstream?.close()])
    await Effect.runPromise(Scope.close(smtpScope, Exit.void))
    rmSync(dataDir, { recursive: true, force: true })
  }, 60_000)

  it("identity provider (SERVICE_IDP_*): sign-in starts at its authorize page", async () => {
    const start = await fetch(`${base}/v1/auth/idp/start?redirect=${encodeURIComponent("http://app.test/in")}`, {
      redirect: "manual"
    })
    expect(start.status).toBe(302)
    const location = new URL(start.headers.get("location")!)
    expect(`${location.origin}${location.pathname}`).toBe(fakeIdp.authorizeUrl)
  })

  it("SMTP (SERVICE_SMTP_URL): an invitation's email is delivered to the SMTP server", async () => {
    const org = await session.call("POST", "/v1/orgs", { name: "Provider Team" })
    expect(org.status).toBe(201)
    const email = "invited@providers.example"
    const invite = await session.call("POST", `/v1/orgs/${org.body.slug}/invites`, { email, role: "member" })
    expect(invite.status).toBe(201)
    await expect
      .poll(async () => (await Effect.runPromise(smtp.received)).some((message) => message.to.includes(email)), {
        timeout: 60_000,
        interval: 250
      })
      .toBe(true)
  })

  it("Polar (SERVICE_POLAR_*): a checkout is created at the payment provider", async () => {
    const before = polar.requests.length
    const checkout = await session.call("POST", `/v1/orgs/${slug}/billing/checkout`, { returnTo: `${base}/done` })
    expect(checkout.status).toBe(200)
    expect(polar.requests.length).toBeGreaterThan(before)
    expect(polar.requests.at(-1)).toMatchObject({ token: polar.token })
  })

  it("Name.com (SERVICE_REGISTRAR_*): a domain check asks the registrar", async () => {
    const check = await session.call("POST", `/v1/orgs/${slug}/domains/check`, { names: ["providers-test.example"] })
    expect(check.status).toBe(200)
    expect(registrar.requests.at(-1)).toMatchObject({ path: "/v4/domains:checkAvailability", authorized: true })
  })

  it("SNS (SERVICE_MAIL_TOPIC_ARN, SERVICE_MAIL_SNS_*): a signed subscription confirmation is verified and confirmed", async () => {
    const message = sns.subscriptionConfirmation()
    const reply = await fetch(`${base}/v1/hooks/mailer`, {
      method: "POST",
      headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "SubscriptionConfirmation" },
      body: JSON.stringify(message)
    })
    expect(reply.status).toBe(200)
    const url = new URL(message.SubscribeURL!)
    expect(sns.confirmations).toContain(`${url.pathname}${url.search}`)
  })

  it("SNS (SERVICE_MAIL_TOPIC_ARN, SERVICE_MAIL_SNS_*): a signed notification whose Signature was removed is 403, like a wrong one", async () => {
    const signed = sns.notification({ notificationType: "Delivery", mail: { messageId: "missing-signature" } })
    const post = (message: object) =>
      fetch(`${base}/v1/hooks/mailer`, {
        method: "POST",
        headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
        body: JSON.stringify(message)
      }).then(async (reply) => ({ status: reply.status, code: ((await reply.json()) as { code?: string }).code }))
    const { Signature: _removed, ...unsigned } = signed
    expect(await post(unsigned)).toEqual({ status: 403, code: "forbidden" })
    const wrong = `${signed.Signature!.startsWith("A") ? "B" : "A"}${signed.Signature!.slice(1)}`
    expect(await post({ ...signed, Signature: wrong })).toEqual({
      status: 403,
      code: "forbidden"
    })
  })

  it("AI upstream (SERVICE_AI_UPSTREAM_*): a gateway call reaches the upstream with the operator's key", async () => {
    const paid = await polar.deliver(`${base}/v1/hooks/billing`, {
      type: "order.paid",
      data: { id: "ord_providers", metadata: { kind: "ai_credit", microCents: "500000000", orgSlug: slug } }
    })
    expect(paid.body).toEqual({ applied: true })
    expect((await session.call("POST", `/v1/orgs/${slug}/projects`, { name: "aiuser" })).status).toBe(201)
    expect((await session.call("POST", `/v1/orgs/${slug}/projects/aiuser/ai`)).status).toBe(200)
    const state = await fetch(`${base}/v1/node/state`, { headers: { authorization: `Bearer ${nodeToken}` } })
    const key = ((await state.json()) as { projects: Array<any> }).projects.find(
      (project) => project.name === "aiuser" && project.bindings.ai !== null
    ).bindings.ai.key as string
    const reply = await fetch(`${base}/v1/ai/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [{ role: "user", content: "hello" }] })
    })
    expect(reply.status).toBe(200)
    expect(upstream.requests.at(-1)).toMatchObject({ token: upstream.key })
  })
  it("AI upstream and sign-in through a worker: env.ai.chat reaches the upstream, env.auth is present with the grant", async () => {
    const upstreamCalls = upstream.requests.length
    const created = await session.call("POST", `/v1/orgs/${slug}/projects`, { name: "aiworker" })
    expect(created.status).toBe(201)
    const project = `/v1/orgs/${slug}/projects/aiworker`
    expect((await session.call("POST", `${project}/ai`)).status).toBe(200)
    // End-user sign-in keeps its users in the project's database: granted first.
    expect((await session.call("POST", `${project}/database`)).status).toBe(200)
    expect((await session.call("POST", `${project}/auth`)).status).toBe(200)
    const deployed = await fetch(`${base}${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${session.token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "aiworker", ai: true, auth: true }),
          {
            name: "worker/index.js",
            content: `export default { async fetch(request, env) {
              if (env.ai === undefined || env.auth === undefined) return new Response("not yet", { status: 503 })
              const answer = await env.ai.chat({ model: "gpt-4.1", messages: [{ role: "user", content: "hello" }] })
              return Response.json({ content: answer.choices[0].message.content, user: await env.auth.user(request) })
            } }`
          }
        ])
      )
    })
    expect(deployed.status).toBe(201)
    const host = created.body.hostname as string
    const get = () =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const request = Http.request(
          { host: "127.0.0.1", port: edgePort, path: "/chat", headers: { host } },
          (response) => {
            let text = ""
            response.on("data", (chunk) => (text += chunk))
            response.on("end", () => resolve({ status: response.statusCode!, text }))
          }
        )
        request.on("error", reject)
        request.end()
      })
    // The grants reach the running worker at the node's next convergence: until then env.ai is absent.
    let reply = await get()
    for (let tries = 0; reply.status !== 200 && tries < 60; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      reply = await get()
    }
    expect(reply.status, reply.text).toBe(200)
    expect(JSON.parse(reply.text)).toEqual({ content: expect.any(String), user: null })
    expect(upstream.requests.length).toBe(upstreamCalls + 1)
    expect(upstream.requests.at(-1)).toMatchObject({ token: upstream.key })
  })

  it("plan numbers (SERVICE_PLAN_LIMITS): the org's limits, quota, mail cap and AI limits are the overridden ones", async () => {
    const team = await session.call("POST", "/v1/orgs", { name: "Plan Numbers" })
    expect(team.status).toBe(201)
    const org = team.body.slug as string
    const billing = await session.call("GET", `/v1/orgs/${org}/billing`)
    expect(billing.status).toBe(200)
    expect(billing.body.limits.free).toEqual({
      projectLimit: 4,
      storageQuotaBytes: 1048576,
      mailHourlyCap: 5,
      mailKeepDays: 30,
      ai: { maxOutputTokens: 4096, maxInputTokens: 32768, requestsPerMinute: 7, dailySpendMicroCents: 100000000 }
    })
    expect(billing.body.limits.pro).toMatchObject({ projectLimit: 50, mailHourlyCap: 1000, mailKeepDays: 400 })
    const me = await session.call("GET", "/v1/me")
    expect(me.body.orgs.find((membership: any) => membership.slug === org).projectLimit).toBe(4)
    for (const name of ["first", "second", "third", "fourth"]) {
      expect((await session.call("POST", `/v1/orgs/${org}/projects`, { name })).status).toBe(201)
    }
    const fifth = await session.call("POST", `/v1/orgs/${org}/projects`, { name: "fifth" })
    expect(fifth.status).toBe(409)
    expect(fifth.body).toMatchObject({ code: "project_limit", details: { limit: 4, count: 4, plan: "free" } })
    const storage = await session.call("GET", `/v1/orgs/${org}/projects/first/storage`)
    expect(storage.body.quotaBytes).toBe(1048576)
    const email = await session.call("GET", `/v1/orgs/${org}/projects/first/email`)
    expect(email.body.hourlyCap).toBe(5)
    const ai = await session.call("GET", `/v1/orgs/${org}/projects/first/ai`)
    expect(ai.body.limits.requestsPerMinute).toBe(7)
  })
})
