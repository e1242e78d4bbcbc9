import { bundleOf, manifestEntry, startS3rver } from "@hostplane/testkit"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, root, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

const nodeToken = "node-token-remote-process-5d2a"
const mailDomain = "mail.remote.test"

/** The `hostplane-node` binary with nothing but `env` (no setting of the control plane's reaches it). */
const startNode = (env: Record<string, string>) => {
  let output = ""
  const child = spawn(process.execPath, ["--conditions=@hostplane/source", "packages/node/src/bin/node.ts"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, output: () => output, exited }
}

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
  let s3: Awaited<ReturnType<typeof startS3rver>> | undefined
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
    control = await startOnData(tempDir("hostplane-control-"), {
      SERVICE_NODE_TOKEN: nodeToken,
      SERVICE_MAIL_DOMAIN: mailDomain,
      SERVICE_DNS_LISTEN: "off",
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
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it("a worker deployed through the control API answers on the node's edge with its secrets; a secret change and a redeploy reach it; env.email goes through the relay; its invocations are in the control plane's logs", async () => {
    const { call, token } = await signIn(control!.base, "remote-node-owner")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const created = await call("POST", `/v1/orgs/${slug}/projects`, { name: "far" })
    expect(created.status).toBe(201)
    const host = created.body.hostname as string
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

    // A protected deployment is not served by a node that cannot check passes: a clear 503, never the content.
    expect((await call("PUT", `${project}/access`, { mode: "password", password: "far away pass" })).status).toBe(200)
    const refused = await eventually(
      () => edgeGet(edgePort, host, "/hello"),
      (reply) => reply.status === 503
    )
    expect(JSON.parse(refused.text).code).toBe("access_unavailable")
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
})
