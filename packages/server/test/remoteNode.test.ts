import {
  bundleOf,
  FakeIdentityProvider,
  type FakeOpenAi,
  type FakePolar,
  manifestEntry,
  startFakeOpenAi,
  startFakePolar,
  startS3rver,
  testAuthority
} from "@hostplane/testkit"
import { Effect, ManagedRuntime } from "effect"
import type { ChildProcess } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, signIn, spawnScript, startOnData, stopServer } from "./support/ServerProcess.ts"

/** Passes a request on to the control plane at `target` and its answer back: a proxy between a node and the node API. */
const relay = (target: URL, request: Http.IncomingMessage, response: Http.ServerResponse) => {
  const upstream = Http.request(
    { host: target.hostname, port: target.port, path: request.url, method: request.method, headers: request.headers },
    (answer) => {
      response.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(response)
    }
  )
  upstream.on("error", () => response.destroy())
  request.pipe(upstream)
}

const nodeToken = "node-token-remote-process-5d2a"
const mailDomain = "mail.remote.test"

/** The `hostplane-node` binary with nothing but `env` (no setting of the control plane's reaches it). */
const startNode = (env: Record<string, string>) => {
  let output = ""
  const child = spawnScript("start:node", {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, output: () => output, exited }
}

interface EdgeReply {
  readonly status: number
  readonly text: string
  readonly location: string | undefined
  /** The Set-Cookie lines with each cookie's value replaced by `<value>`, to compare two edges' answers. */
  readonly cookies: Array<string>
  /** The `name=value` pairs the answer sets. */
  readonly set: Record<string, string>
}

/** One request to an edge, as a browser or a client sends it; the answer with its cookies apart. */
const edgeCall = (
  port: number,
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; form?: Record<string, string> } = {}
) =>
  new Promise<EdgeReply>((resolve, reject) => {
    const body = options.form === undefined ? undefined : new URLSearchParams(options.form).toString()
    const request = Http.request(
      {
        host: "127.0.0.1",
        port,
        path,
        method: options.method ?? (body === undefined ? "GET" : "POST"),
        headers: {
          host,
          ...(body === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" }),
          ...options.headers
        }
      },
      (response) => {
        let text = ""
        response.on("data", (chunk) => (text += chunk))
        response.on("end", () => {
          const lines = response.headers["set-cookie"] ?? []
          resolve({
            status: response.statusCode!,
            text,
            location: response.headers.location,
            cookies: lines.map((line) => line.replace(/^([^=]+)=[^;]*/, "$1=<value>")),
            set: Object.fromEntries(lines.map((line) => /^([^=]+)=([^;]*)/.exec(line)!.slice(1, 3)))
          })
        })
      }
    )
    request.on("error", reject)
    request.end(body)
  })

/** The parts of an answer that must be the same on the control plane's own edge and on a remote node's. */
const shape = (reply: EdgeReply) => ({
  status: reply.status,
  location: reply.location,
  cookies: reply.cookies,
  code: reply.text.startsWith("{") ? JSON.parse(reply.text).code : undefined,
  page: reply.text.startsWith("<!doctype html>") ? reply.text : undefined
})

const edgeGet = (port: number, host: string, path: string) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, text }))
    })
    request.on("error", reject)
    request.end()
  })

/** Polls `read` until `done` holds of its answer (the node converges on a poll), or gives the last answer. */
const eventually = async <A>(read: () => Promise<A>, done: (value: A) => boolean, ms = 30_000): Promise<A> => {
  const until = Date.now() + ms
  for (;;) {
    const value = await read().catch((error: unknown) => error as A)
    if (done(value) || Date.now() > until) return value
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const worker = (version: string) => `export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    if (url.pathname === "/put") {
      await env.storage.put("notes/first.txt", "hello")
      return new Response(await (await env.storage.get("notes/first.txt")).text())
    }
    if (url.pathname === "/forge") {
      try {
        await env.email.send("From: someone@elsewhere.test\\r\\nTo: zoe@example.com\\r\\nSubject: forged\\r\\n\\r\\nHi.\\r\\n")
        return new Response("sent")
      } catch (error) {
        return new Response(error.message, { status: 403 })
      }
    }
    if (url.pathname === "/db") {
      try {
        return Response.json((await env.db.query("select 41 + 1 as answer")).rows)
      } catch (error) {
        return new Response(error.message, { status: 502 })
      }
    }
    if (url.pathname === "/mail") {
      const sent = await env.email.send({ to: "zoe@example.com", subject: "from the node", text: "Hello." })
      return Response.json(sent)
    }
    console.log("served", url.pathname, "${version}")
    return new Response("${version} " + env.GREETING + " " + typeof env.email + " " + typeof env.storage)
  }
}`

/**
 * decisions.md parts 6 and 13: a node on another machine runs from the node API alone. The control plane is the server
 * binary as `npm start` runs it; the node is the `hostplane-node` binary with its own data directory and only the
 * control plane's URL and the node token.
 */
describe("a remote node process serves workers from the node API alone", () => {
  let control: { base: string; child: ChildProcess; output: () => string } | undefined
  let node: ReturnType<typeof startNode> | undefined
  let edgePort: number
  /** The control plane's own edge, to compare its answers with the node's. */
  let controlEdgePort: number
  /** The public project of the first test, and the protected one of the access test with a member's pass. */
  let farHost: string
  let guarded: { host: string; member: string } | undefined
  /** The project of the sign-in test and its end user's session. */
  let signedIn: { host: string; session: string } | undefined
  // The providers' side of end-user sign-in: the control plane's github endpoints point here.
  const idp = ManagedRuntime.make(
    FakeIdentityProvider.layer({
      userinfoStyle: "github",
      user: { subject: "5151", login: "far-user", email: "far@example.test", name: "Far User" }
    })
  )
  let s3: Awaited<ReturnType<typeof startS3rver>> | undefined
  // The AI gateway's upstream, and the payments provider whose order.paid gives an org AI credit.
  let upstream: FakeOpenAi | undefined
  let polar: FakePolar | undefined
  const dirs: Array<string> = []
  const tempDir = (name: string) => {
    const dir = mkdtempSync(join(tmpdir(), name))
    dirs.push(dir)
    return dir
  }

  beforeAll(async () => {
    // The storage add-on's bucket, the control plane's and the node's alike (the node's only way to its objects).
    s3 = await startS3rver()
    const bucket = {
      SERVICE_S3_URL: s3.url,
      SERVICE_S3_ACCESS_KEY_ID: s3.accessKeyId,
      SERVICE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey
    }
    upstream = await startFakeOpenAi()
    polar = await startFakePolar()
    controlEdgePort = await freePort()
    const provider = await idp.runPromise(Effect.service(FakeIdentityProvider))
    control = await startOnData(tempDir("hostplane-control-"), {
      SERVICE_AUTH_GITHUB_AUTHORIZE_URL: provider.authorizeUrl,
      SERVICE_AUTH_GITHUB_TOKEN_URL: provider.tokenUrl,
      SERVICE_AUTH_GITHUB_USERINFO_URL: provider.userinfoUrl,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${controlEdgePort}`,
      SERVICE_NODE_TOKEN: nodeToken,
      SERVICE_MAIL_DOMAIN: mailDomain,
      SERVICE_DNS_LISTEN: "off",
      SERVICE_AI_UPSTREAM_URL: upstream.url,
      SERVICE_AI_UPSTREAM_KEY: upstream.key,
      SERVICE_BILLING_WEBHOOK_SECRET: polar.webhookSecret,
      ...bucket
    })
    edgePort = await freePort()
    node = startNode({
      SERVICE_CONTROL_URL: control.base,
      SERVICE_NODE_TOKEN: nodeToken,
      SERVICE_DATA_DIR: tempDir("hostplane-remote-node-"),
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_WORKER_SHARDS: "1",
      ...bucket
    })
    const up = await eventually(
      () => edgeGet(edgePort, "health.invalid", "/__service/health"),
      (reply) => (reply as { status?: number }).status === 200,
      120_000
    )
    if ((up as { status?: number }).status !== 200) throw new Error(`the node did not start:\n${node.output()}`)
  }, 300_000)

  afterAll(async () => {
    await stopServer(node?.child, "SIGTERM")
    await stopServer(control?.child, "SIGTERM")
    await s3?.close()
    await upstream?.close()
    await polar?.close()
    await idp.dispose()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it("a worker deployed through the control API answers on the node's edge with its secrets; a secret change and a redeploy reach it; env.email goes through the relay; its invocations are in the control plane's logs", async () => {
    const { call, token } = await signIn(control!.base, "remote-node-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const created = await call("POST", `/v1/orgs/${slug}/projects`, { name: "far" })
    expect(created.status).toBe(201)
    const host = created.body.hostname as string
    farHost = host
    const project = `/v1/orgs/${slug}/projects/far`
    expect((await call("PUT", `${project}/secrets/GREETING`, { value: "one" })).status).toBe(200)
    const grant = await call("POST", `${project}/email`)
    expect(grant.status).toBe(200)
    expect((await call("POST", `${project}/storage`)).status).toBe(200)
    const deploy = async (version: string) => {
      const reply = await fetch(`${control!.base}${project}/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
        body: await Effect.runPromise(
          bundleOf([manifestEntry({ name: "far" }), { name: "worker/index.js", content: worker(version) }])
        )
      })
      expect(reply.status).toBe(201)
    }
    await deploy("v1")

    const served = (text: string) =>
      eventually(
        () => edgeGet(edgePort, host, "/hello"),
        (reply) => reply.text === text
      )
    expect(await served("v1 one object object")).toEqual({ status: 200, text: "v1 one object object" })

    // env.db: the project database the control plane runs, its certificate verified with the cluster authority the
    // node read from the control plane.
    expect((await call("POST", `${project}/database`)).status).toBe(200)
    const queried = await eventually(
      () => edgeGet(edgePort, host, "/db"),
      (reply) => reply.status === 200
    )
    expect(queried).toEqual({ status: 200, text: JSON.stringify([{ answer: 42 }]) })

    // A secret change reaches the running worker without a redeploy; a redeploy serves the new code.
    expect((await call("PUT", `${project}/secrets/GREETING`, { value: "two" })).status).toBe(200)
    expect(await served("v1 two object object")).toEqual({ status: 200, text: "v1 two object object" })
    await deploy("v2")
    expect(await served("v2 two object object")).toEqual({ status: 200, text: "v2 two object object" })

    // env.email: through the control plane's relay, as the project's address, with its mail log row.
    const mailed = await edgeGet(edgePort, host, "/mail")
    expect(mailed.status).toBe(200)
    const sent = JSON.parse(mailed.text) as { id: string; messageId: string }
    expect(sent.id).toMatch(/^mail_/)
    const log = await call("GET", `${project}/email/log`)
    expect(log.status).toBe(200)
    expect(log.body.items).toContainEqual(
      expect.objectContaining({ id: sent.id, direction: "out", to: "zoe@example.com" })
    )

    // The relay's refusals reach the worker with their codes: another From is not the project's to send.
    const forged = await edgeGet(edgePort, host, "/forge")
    expect(forged.status).toBe(403)
    expect(forged.text).toMatch(/^from_not_allowed/)

    // env.storage: written to the bucket under the project's prefix, its usage reported to the control plane.
    expect(await edgeGet(edgePort, host, "/put")).toEqual({ status: 200, text: "hello" })
    const projectId = (await call("GET", project)).body.id as string
    const objects = readdirSync(s3!.directory, { recursive: true }).map(String)
    expect(objects.some((path) => path.includes(projectId) && path.endsWith("._S3rver_object"))).toBe(true)
    const usage = await eventually(
      () => call("GET", `${project}/storage`),
      (reply) => reply.body?.usedBytes > 0
    )
    expect(usage.body).toMatchObject({ enabled: true, usedBytes: 5 })

    // The node reported its invocations: the control plane lists them with their console lines.
    const logs = await eventually(
      () => call("GET", `${project}/logs?limit=100`),
      (reply) =>
        reply.status === 200 &&
        (reply.body.items as Array<any>).some((event) =>
          event.logs.some((line: any) => JSON.stringify(line.message) === JSON.stringify(["served", "/hello", "v2"]))
        )
    )
    const event = (logs.body.items as Array<any>).find((item) =>
      item.logs.some((line: any) => JSON.stringify(line.message) === JSON.stringify(["served", "/hello", "v2"]))
    )
    expect(event).toMatchObject({ outcome: "ok", response: { status: 200 }, request: { method: "GET" } })
    expect(event.request.url).toBe(`http://${host}/hello`)
  }, 180_000)

  it("access modes on a remote node: the password form, org passes from authorize codes and the bypass header answer exactly as on the control plane's own edge, with passes the control plane keeps", async () => {
    const { call, token } = await signIn(control!.base, "remote-node-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const created = await call("POST", `/v1/orgs/${slug}/projects`, { name: "guarded" })
    expect(created.status).toBe(201)
    const host = created.body.hostname as string
    const project = `/v1/orgs/${slug}/projects/guarded`
    expect((await call("PUT", `${project}/secrets/GREETING`, { value: "inside" })).status).toBe(200)
    const deployed = await fetch(`${control!.base}${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([manifestEntry({ name: "guarded" }), { name: "worker/index.js", content: worker("g1") }])
      )
    })
    expect(deployed.status).toBe(201)
    const content = "g1 inside undefined undefined"
    await eventually(
      () => edgeGet(edgePort, host, "/hello"),
      (reply) => reply.text === content
    )

    const password = "guarded remote pass 7c1e"
    expect((await call("PUT", `${project}/access`, { mode: "password", password })).status).toBe(200)
    await eventually(
      () => edgeGet(edgePort, host, "/hello"),
      (reply) => reply.status === 401
    )
    const edges = { control: controlEdgePort, node: edgePort }
    /** The same request to both edges: the answers' shapes must be equal; each edge's own answer is returned. */
    const both = async (path: string, options: Parameters<typeof edgeCall>[3] = {}) => {
      const onControl = await edgeCall(edges.control, host, path, options)
      const onNode = await edgeCall(edges.node, host, path, options)
      expect(shape(onNode)).toEqual(shape(onControl))
      return { onControl, onNode }
    }
    const json = { accept: "application/json" }
    const html = { accept: "text/html" }

    // Without a pass: the JSON 401 and the password page; a wrong password is the page again, 401.
    expect(shape((await both("/hello", { headers: json })).onNode)).toMatchObject({ status: 401, code: "unauthorized" })
    expect((await both("/hello", { headers: html })).onNode.status).toBe(401)
    const wrong = await both("/__service/access/password", {
      headers: html,
      form: { password: "not it", next: "/hello" }
    })
    expect(wrong.onNode.status).toBe(401)

    // The right password: a redirect to `next` setting the pass; the pass opens the deployment on either edge.
    const right = await both("/__service/access/password", { form: { password, next: "/hello" } })
    expect(shape(right.onNode)).toMatchObject({ status: 303, location: "/hello" })
    expect(right.onNode.cookies).toEqual([
      "__Host-service_access=<value>; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=43200"
    ])
    const pass = right.onNode.set["__Host-service_access"]!
    for (const port of [edges.node, edges.control]) {
      const opened = await edgeCall(port, host, "/hello", { headers: { cookie: `__Host-service_access=${pass}` } })
      expect({ status: opened.status, text: opened.text }).toEqual({ status: 200, text: content })
    }
    const forged = await both("/hello", { headers: { ...json, cookie: "__Host-service_access=forged" } })
    expect(forged.onNode.status).toBe(401)

    // The bypass header admits in any mode; a revoked one no longer does.
    const bypass = await call("POST", `${project}/access/bypass`)
    expect(bypass.status).toBe(200)
    const secret = bypass.body.secret as string
    expect((await edgeCall(edgePort, host, "/hello", { headers: { "service-access-bypass": secret } })).text).toBe(
      content
    )
    expect((await call("DELETE", `${project}/access/bypass`)).status).toBe(204)
    expect(
      shape(await edgeCall(edgePort, host, "/hello", { headers: { ...json, "service-access-bypass": secret } }))
    ).toMatchObject({ status: 401, code: "unauthorized" })

    // A new password ends the passes of the old one, on the node as on the control plane.
    expect((await call("PUT", `${project}/access`, { mode: "password", password: `${password} 2` })).status).toBe(200)
    expect(
      shape((await both("/hello", { headers: { ...json, cookie: `__Host-service_access=${pass}` } })).onNode)
    ).toMatchObject({ status: 401, code: "unauthorized" })

    // Org mode: an authorize code brought to the node's callback is a member's pass; a used code is 403.
    expect((await call("PUT", `${project}/access`, { mode: "org" })).status).toBe(200)
    await eventually(
      () => edgeCall(edgePort, host, "/hello", { headers: { ...json, cookie: `__Host-service_access=${pass}` } }),
      (reply) => reply.text.includes("organization")
    )
    const authorize = async () => {
      const reply = await call("POST", "/v1/access/authorize", { to: host, next: "/hello" })
      expect(reply.status).toBe(200)
      const url = new URL(reply.body.url as string)
      return `${url.pathname}${url.search}`
    }
    const onControl = await edgeCall(edges.control, host, await authorize())
    const callback = await authorize()
    const onNode = await edgeCall(edges.node, host, callback)
    expect(shape(onNode)).toEqual(shape(onControl))
    expect(shape(onNode)).toMatchObject({ status: 303, location: "/hello" })
    const member = onNode.set["__Host-service_access"]!
    expect(
      (await edgeCall(edgePort, host, "/hello", { headers: { cookie: `__Host-service_access=${member}` } })).text
    ).toBe(content)
    const reused = await edgeCall(edgePort, host, callback)
    expect(shape(reused)).toMatchObject({ status: 403, code: "forbidden" })
    expect(shape(await edgeCall(edgePort, host, "/__service/access/callback?code=made-up&next=/"))).toEqual(
      shape(await edgeCall(edges.control, host, "/__service/access/callback?code=made-up&next=/"))
    )
    // A password pass is no member's pass.
    expect(
      shape(await edgeCall(edgePort, host, "/hello", { headers: { ...json, cookie: `__Host-service_access=${pass}` } }))
    ).toMatchObject({ status: 401 })

    // Neither the password, the passes, the codes nor the bypass secret is in a log line of either process.
    const callbackCode = new URLSearchParams(callback.split("?")[1]).get("code")!
    for (const output of [node!.output(), control!.output()]) {
      for (const secretValue of [password, pass, member, secret, callbackCode])
        expect(output).not.toContain(secretValue)
    }
    guarded = { host, member }
  }, 180_000)

  it("end-user sign-in on a remote node: login, the provider, the callback, me, env.auth.user and logout run the control plane's flow, with the same answers as its own edge", async () => {
    const { call, token } = await signIn(control!.base, "remote-node-owner")
    const provider = await idp.runPromise(Effect.service(FakeIdentityProvider))
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const created = await call("POST", `/v1/orgs/${slug}/projects`, { name: "members" })
    expect(created.status).toBe(201)
    const host = created.body.hostname as string
    const project = `/v1/orgs/${slug}/projects/members`
    const whoami = `export default {
      async fetch(request, env) {
        try {
          return Response.json({ user: await env.auth.user(request), auth: typeof env.auth })
        } catch (error) {
          return new Response(error.message, { status: 503 })
        }
      }
    }`
    const deployed = await fetch(`${control!.base}${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([
          { name: "service.json", content: JSON.stringify({ name: "members", auth: true }) },
          { name: "worker/index.js", content: whoami }
        ])
      )
    })
    expect(deployed.status).toBe(201)
    expect((await call("POST", `${project}/database`)).status).toBe(200)
    expect((await call("POST", `${project}/auth`)).status).toBe(200)
    const registered = await call("PUT", `${project}/auth/providers/github`, {
      clientId: provider.clientId,
      clientSecret: provider.clientSecret
    })
    expect(registered.status).toBe(200)
    // The grant reaches the node with the state: env.auth is there, nobody signed in.
    const anonymous = await eventually(
      () => edgeGet(edgePort, host, "/whoami"),
      (reply) => reply.text === JSON.stringify({ user: null, auth: "object" })
    )
    expect(anonymous).toEqual({ status: 200, text: JSON.stringify({ user: null, auth: "object" }) })

    /** Login on one edge, the provider's page, back to that edge's callback: the callback's answer and the cookies. */
    const flowOn = async (port: number) => {
      const start = await edgeCall(port, host, "/__service/auth/login/github?next=/whoami")
      const authorizeAt = new URL(start.location!)
      const back = await fetch(start.location!, { redirect: "manual" })
      expect(back.status).toBe(302)
      const callback = new URL(back.headers.get("location")!)
      expect(`${callback.origin}${callback.pathname}`).toBe(`https://${host}/__service/auth/callback/github`)
      const flow = start.set["__Host-service_auth_flow"]!
      const done = await edgeCall(port, host, `${callback.pathname}${callback.search}`, {
        headers: { cookie: `__Host-service_auth_flow=${flow}` }
      })
      return { start, authorizeAt, done, callback: `${callback.pathname}${callback.search}` }
    }
    const onControl = await flowOn(controlEdgePort)
    const onNode = await flowOn(edgePort)
    expect(`${onNode.authorizeAt.origin}${onNode.authorizeAt.pathname}`).toBe(provider.authorizeUrl)
    expect(onNode.authorizeAt.searchParams.get("redirect_uri")).toBe(`https://${host}/__service/auth/callback/github`)
    expect({ ...shape(onNode.start), location: undefined }).toEqual({ ...shape(onControl.start), location: undefined })
    expect(shape(onNode.start)).toMatchObject({ status: 303 })
    expect(shape(onNode.done)).toEqual(shape(onControl.done))
    expect(shape(onNode.done)).toMatchObject({ status: 303, location: "/whoami" })
    const session = onNode.done.set["__Host-service_auth"]!
    expect(session.length).toBeGreaterThan(40)
    const cookie = { cookie: `__Host-service_auth=${session}` }

    // The session is the control plane's: `me` answers the same on both edges, and the worker's env.auth sees it.
    const me = await edgeCall(edgePort, host, "/__service/auth/me", { headers: cookie })
    expect(me.status).toBe(200)
    expect(JSON.parse(me.text)).toMatchObject({ provider: "github", subject: "5151", email: "far@example.test" })
    expect(me.text).toBe((await edgeCall(controlEdgePort, host, "/__service/auth/me", { headers: cookie })).text)
    const seen = await edgeCall(edgePort, host, "/whoami", { headers: cookie })
    expect(JSON.parse(seen.text)).toEqual({
      user: { id: JSON.parse(me.text).id, email: "far@example.test", name: "Far User", provider: "github" },
      auth: "object"
    })

    // A callback replayed without its browser's flow cookie is refused alike; so is an unknown provider.
    expect(shape(await edgeCall(edgePort, host, onNode.callback))).toEqual(
      shape(await edgeCall(controlEdgePort, host, onControl.callback))
    )
    expect(shape(await edgeCall(edgePort, host, onNode.callback))).toMatchObject({
      status: 400,
      code: "state_mismatch"
    })
    expect(shape(await edgeCall(edgePort, host, "/__service/auth/login/google"))).toEqual(
      shape(await edgeCall(controlEdgePort, host, "/__service/auth/login/google"))
    )

    // Logout ends the session for every edge; the worker then sees nobody.
    const out = await edgeCall(edgePort, host, "/__service/auth/logout?next=/bye", { method: "POST", headers: cookie })
    expect(shape(out)).toMatchObject({ status: 303, location: "/bye" })
    expect(out.cookies).toHaveLength(1)
    expect(out.cookies[0]).toMatch(/^__Host-service_auth=<value>;.*Max-Age=0/)
    expect((await edgeCall(controlEdgePort, host, "/__service/auth/me", { headers: cookie })).status).toBe(401)
    expect(JSON.parse((await edgeCall(edgePort, host, "/whoami", { headers: cookie })).text).user).toBeNull()

    // A second sign-in for the control-plane-down test; no session, code or client secret is in a log line.
    const again = await flowOn(edgePort)
    signedIn = { host, session: again.done.set["__Host-service_auth"]! }
    for (const output of [node!.output(), control!.output()]) {
      for (const value of [session, signedIn.session, provider.clientSecret ?? "client-secret"]) {
        expect(output).not.toContain(value)
      }
    }
  }, 180_000)

  it("env.ai on a remote node: each call goes through the control plane's AI gateway, which writes one ledger call row per call; a refusal rejects with the gateway's code", async () => {
    const { call, token } = await signIn(control!.base, "remote-node-ai")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const paid = await polar!.deliver(`${control!.base}/v1/hooks/billing`, {
      type: "order.paid",
      data: { id: "ord_remote_ai", metadata: { kind: "ai_credit", microCents: "500000000", orgSlug: slug } }
    })
    expect(paid.body).toEqual({ applied: true })
    const created = await call("POST", `/v1/orgs/${slug}/projects`, { name: "farai" })
    expect(created.status).toBe(201)
    const host = created.body.hostname as string
    const project = `/v1/orgs/${slug}/projects/farai`
    expect((await call("POST", `${project}/ai`)).status).toBe(200)
    const deployed = await fetch(`${control!.base}${project}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([
          manifestEntry({ name: "farai", ai: true }),
          {
            name: "worker/index.js",
            content: `export default { async fetch(request, env) {
              if (env.ai === undefined) return new Response("not yet", { status: 503 })
              const model = new URL(request.url).pathname === "/unknown" ? "no-such-model" : "gpt-4.1"
              try {
                const answer = await env.ai.chat({ model, messages: [{ role: "user", content: "hello from afar" }] })
                return Response.json({ model: answer.model, content: answer.choices[0].message.content })
              } catch (error) {
                return new Response(error.message, { status: 502 })
              }
            } }`
          }
        ])
      )
    })
    expect(deployed.status).toBe(201)
    const calls = () =>
      call("GET", `/v1/orgs/${slug}/ai/ledger?limit=100`).then(
        (reply) => (reply.body.items as Array<{ kind: string }>).filter((row) => row.kind === "call").length
      )
    expect(await calls()).toBe(0)
    const asked = upstream!.requests.length
    // The deployment and the grant reach the node at its next read of the state: until then the host has nothing
    // deployed (404) or env.ai is absent (503).
    const first = await eventually(
      () => edgeGet(edgePort, host, "/chat"),
      (reply) => reply.status !== 503 && reply.status !== 404
    )
    expect(first.status, first.text).toBe(200)
    expect(JSON.parse(first.text)).toEqual({ model: "gpt-4.1", content: expect.any(String) })
    expect((await edgeGet(edgePort, host, "/chat")).status).toBe(200)
    // Each call reached the upstream once, with the operator's key, and is one `call` row of the org's ledger.
    expect(upstream!.requests.length).toBe(asked + 2)
    expect(upstream!.requests.at(-1)).toMatchObject({ token: upstream!.key })
    expect(await calls()).toBe(2)
    // A model outside the catalog: the gateway's 400 unknown_model reaches the worker as its code, and costs nothing.
    const unknown = await edgeGet(edgePort, host, "/unknown")
    expect(unknown.status).toBe(502)
    expect(unknown.text).toMatch(/^unknown_model/)
    expect(await calls()).toBe(2)
    // The project's AI key is the node's to present, never a line of its output.
    const state = await fetch(`${control!.base}/v1/node/state`, { headers: { authorization: `Bearer ${nodeToken}` } })
    const key = ((await state.json()) as { projects: Array<any> }).projects.find(
      (one) => one.name === "farai" && one.bindings.ai !== null
    ).bindings.ai.key as string
    expect(node!.output()).not.toContain(key)
    expect(control!.output()).not.toContain(key)
  }, 180_000)

  it("a node given another authority for the database clusters refuses the project database's certificate", async () => {
    // The node API as a node would see it from a control plane whose cluster authority is not the clusters' own:
    // every route passed through, the authority replaced by a throwaway CA's.
    const own = await fetch(`${control!.base}/v1/node/database/authority`, {
      headers: { authorization: `Bearer ${nodeToken}` }
    })
    // The server's embedded clusters have an authority: the first node verifies with it.
    expect(((await own.json()) as { authority: string }).authority).toMatch(/^-----BEGIN CERTIFICATE-----/)
    const wrongAuthority = testAuthority().root
    const target = new URL(control!.base)
    // The `after` of each state read the node makes: one reader follows the revision, never starting over.
    const stateReads: Array<number> = []
    // Until `rotated`, the node is answered the other authority; then the clusters' own, as after a rotation.
    let rotated = false
    let authorityReads = 0
    const proxy = Http.createServer((request, response) => {
      const path = new URL(request.url!, "http://proxy.invalid")
      if (path.pathname === "/v1/node/state") stateReads.push(Number(path.searchParams.get("after") ?? "0"))
      if (request.url === "/v1/node/database/authority") authorityReads += 1
      if (request.url === "/v1/node/database/authority" && !rotated) {
        response.writeHead(200, { "content-type": "application/json" })
        response.end(JSON.stringify({ authority: wrongAuthority }))
        return
      }
      relay(target, request, response)
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    const port = await freePort()
    const other = startNode({
      SERVICE_CONTROL_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      SERVICE_NODE_TOKEN: nodeToken,
      SERVICE_DATA_DIR: tempDir("hostplane-other-node-"),
      SERVICE_EDGE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_WORKER_SHARDS: "1"
    })
    try {
      const refused = await eventually(
        () => edgeGet(port, farHost, "/db"),
        (reply) => reply.status === 502,
        120_000
      )
      expect(refused.status).toBe(502)
      expect(refused.text).toMatch(/certificate/i)
      // The node with the control plane's own authority still reaches the same database.
      expect(await edgeGet(edgePort, farHost, "/db")).toEqual({ status: 200, text: JSON.stringify([{ answer: 42 }]) })
      // The edge and the worker runtime share one reader of the state: the whole state is read once (after=0), and
      // every later read goes on from the revision the one before answered.
      expect(stateReads.filter((after) => after === 0)).toHaveLength(1)
      expect(stateReads).toEqual([...stateReads].sort((a, b) => a - b))
      // The authority changes: the authority the node holds no longer signs the clusters' certificates. The node
      // reads it again after a refused certificate (not at each query) and reaches the database without a restart.
      const readsBefore = authorityReads
      rotated = true
      const reached = await eventually(
        () => edgeGet(port, farHost, "/db"),
        (reply) => reply.status === 200,
        120_000
      )
      expect(reached).toEqual({ status: 200, text: JSON.stringify([{ answer: 42 }]) })
      expect(authorityReads).toBeGreaterThan(readsBefore)
      const readsAfter = authorityReads
      for (let query = 0; query < 5; query++) {
        expect(await edgeGet(port, farHost, "/db")).toEqual({ status: 200, text: JSON.stringify([{ answer: 42 }]) })
      }
      expect(authorityReads).toBe(readsAfter)
    } finally {
      await stopServer(other.child, "SIGTERM")
      await new Promise((resolve) => proxy.close(resolve))
    }
  }, 180_000)

  it("the node routes of access and sign-in: a wrong node token is 401, an unknown project 404", async () => {
    const post = (path: string, body: unknown, token: string) =>
      fetch(`${control!.base}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }).then(async (reply) => ({ status: reply.status, code: ((await reply.json()) as { code: string }).code }))
    const unknown: Array<[string, unknown]> = [
      ["/v1/node/access/check", { projectId: "prj_unknown", host: "a.example" }],
      ["/v1/node/access/password", { projectId: "prj_unknown", host: "a.example", password: "x" }],
      [
        "/v1/node/auth/signin",
        { projectId: "prj_unknown", host: "a.example", method: "GET", url: "/__service/auth/me" }
      ],
      ["/v1/node/auth/user", { projectId: "prj_unknown", session: "x" }]
    ]
    for (const [path, body] of unknown) {
      expect({ path, ...(await post(path, body, "not-the-node-token")) }).toEqual({
        path,
        status: 401,
        code: "unauthorized"
      })
      expect({ path, ...(await post(path, body, nodeToken)) }).toEqual({ path, status: 404, code: "not_found" })
    }
    expect(await post("/v1/node/access/code", { host: "a.example", code: "x" }, "not-the-node-token")).toEqual({
      status: 401,
      code: "unauthorized"
    })
  }, 60_000)

  it("a control plane that takes connections but never answers: a protected deployment is 503 access_unavailable, a project the node never served 503 worker_unavailable or artifact_store_unavailable, not a request that hangs; all served again once it answers", async () => {
    expect(guarded).toBeDefined()
    // Two projects the node below has never served, each with a secret.
    const { call, token } = await signIn(control!.base, "remote-node-cold")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const cold: Record<string, string> = {}
    for (const name of ["cold-secrets", "cold-bundle"]) {
      const created = await call("POST", `/v1/orgs/${slug}/projects`, { name })
      expect(created.status).toBe(201)
      cold[name] = created.body.hostname as string
      expect((await call("PUT", `/v1/orgs/${slug}/projects/${name}/secrets/GREETING`, { value: name })).status).toBe(
        200
      )
      const deployed = await fetch(`${control!.base}/v1/orgs/${slug}/projects/${name}/deployments`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
        body: await Effect.runPromise(
          bundleOf([manifestEntry({ name }), { name: "worker/index.js", content: worker("v1") }])
        )
      })
      expect(deployed.status).toBe(201)
    }
    const target = new URL(control!.base)
    /** The requests of the node the network drops from now on (their connection open, never answered). */
    let hold: (path: string) => boolean = () => false
    const held: Array<Http.ServerResponse> = []
    // The node API as a node sees it through a network that starts dropping answers.
    const proxy = Http.createServer((request, response) => {
      if (hold(request.url ?? "/")) {
        held.push(response)
        return
      }
      relay(target, request, response)
    })
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
    const port = await freePort()
    const other = startNode({
      SERVICE_CONTROL_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      SERVICE_NODE_TOKEN: nodeToken,
      SERVICE_DATA_DIR: tempDir("hostplane-hung-node-"),
      SERVICE_EDGE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_WORKER_SHARDS: "1",
      // Each refusal below is the node giving up on a call a visitor waits on: 3 s each instead of the default 10.
      SERVICE_NODE_VISITOR_TIMEOUT: "3 seconds"
    })
    const pass = { accept: "application/json", cookie: `__Host-service_access=${guarded!.member}` }
    try {
      const served = await eventually(
        () => edgeCall(port, guarded!.host, "/hello", { headers: pass }),
        (reply) => reply.status === 200,
        120_000
      )
      expect(served.status).toBe(200)
      // The public deployment served once, so the node holds its bundle and secrets.
      expect((await edgeGet(port, farHost, "/hello")).status).toBe(200)
      // The state names both cold projects before anything is dropped.
      for (const host of Object.values(cold)) {
        await eventually(
          () => edgeGet(port, host, "/__service/health"),
          (reply) => reply.status !== 404
        )
      }
      // Only the secrets reads go unanswered: the first request of a project whose secrets the node never read.
      hold = (path) => /^\/v1\/node\/projects\/[^/]+\/secrets/.test(path)
      const json = { accept: "application/json" }
      const noSecrets = await edgeCall(port, cold["cold-secrets"]!, "/hello", { headers: json })
      expect(shape(noSecrets)).toMatchObject({ status: 503, code: "worker_unavailable" })
      // Nothing is answered any more.
      hold = () => true
      const refused = await edgeCall(port, guarded!.host, "/hello", { headers: pass })
      expect(shape(refused)).toMatchObject({ status: 503, code: "access_unavailable" })
      // The public deployment is served from what the node holds meanwhile.
      expect((await edgeGet(port, farHost, "/hello")).status).toBe(200)
      // A deployment whose bundle the node never fetched.
      const noBundle = await edgeCall(port, cold["cold-bundle"]!, "/hello", { headers: json })
      expect(shape(noBundle)).toMatchObject({ status: 503, code: "artifact_store_unavailable" })
      // The node gave up after SERVICE_NODE_VISITOR_TIMEOUT, as its line for the operator says.
      await expect.poll(() => other.output()).toContain("within 3000 ms")
      // The control plane answers again: both are served, with their secrets, without a restart.
      hold = () => false
      for (const [name, host] of Object.entries(cold)) {
        const served = await eventually(
          () => edgeGet(port, host, "/hello"),
          (reply) => reply.status === 200,
          120_000
        )
        expect(served).toEqual({ status: 200, text: `v1 ${name} undefined undefined` })
      }
    } finally {
      for (const response of held) response.destroy()
      await stopServer(other.child, "SIGTERM")
      proxy.closeAllConnections()
      await new Promise((resolve) => proxy.close(resolve))
    }
  }, 180_000)

  it("a node with a wrong token is refused: it says so and stops", async () => {
    const wrong = startNode({
      SERVICE_CONTROL_URL: control!.base,
      SERVICE_NODE_TOKEN: "not-the-node-token",
      SERVICE_DATA_DIR: tempDir("hostplane-wrong-node-"),
      SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`
    })
    const code = await wrong.exited
    expect(code).not.toBe(0)
    expect(wrong.output()).toContain("401")
    expect(wrong.output()).not.toContain("not-the-node-token")
  }, 120_000)

  it("a control plane that is down: the node goes on serving public deployments from what it holds, and answers a protected one 503 access_unavailable at once", async () => {
    expect(guarded).toBeDefined()
    await stopServer(control?.child, "SIGTERM")
    const open = await edgeGet(edgePort, farHost, "/hello")
    expect(open).toEqual({ status: 200, text: "v2 two object object" })
    const refused = await edgeCall(edgePort, guarded!.host, "/hello", {
      headers: { accept: "application/json", cookie: `__Host-service_access=${guarded!.member}` }
    })
    expect(shape(refused)).toMatchObject({ status: 503, code: "access_unavailable" })
    expect(node!.output()).not.toContain(guarded!.member)
    // Sign-in and env.auth need the control plane: a clear 503 and a rejected call, never a hang.
    const headers = { cookie: `__Host-service_auth=${signedIn!.session}` }
    expect(shape(await edgeCall(edgePort, signedIn!.host, "/__service/auth/me", { headers }))).toMatchObject({
      status: 503,
      code: "auth_unavailable"
    })
    const worker = await edgeCall(edgePort, signedIn!.host, "/whoami", { headers })
    expect(worker.status).toBe(503)
    expect(worker.text).toMatch(/^auth_unavailable/)
    expect(node!.output()).not.toContain(signedIn!.session)
  }, 60_000)
})
