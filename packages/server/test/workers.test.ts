import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { commitFiles, git, scratch, withToken, workingCopy } from "../../http/test/support/GitClient.ts"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

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

/** `npm start` runs worker code by default (decisions.md part 13): a bundle deployed through /v1 answers on its host. */
describe("the server binary runs worker code in workerd", () => {
  let server: ServerProcess
  let base: string
  let edgePort: number
  let dataDir: string
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-workers-"))
    const port = await freePort()
    edgePort = await freePort()
    base = `http://127.0.0.1:${port}`
    server = await startServer(
      base,
      {
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: "off",
        DATABASE_URL: "",
        SERVICE_WORKER_TIMEOUT: "5 seconds"
      },
      440
    )
  }, 130_000)
  afterAll(async () => {
    await stopServer(server?.child, "SIGTERM")
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("a worker deployed through /v1 answers its paths with its secrets; faults are the edge's envelopes", async () => {
    const call = async (method: string, path: string, body?: unknown, token?: string) => {
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: {
          "content-type": "application/json",
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
        },
        body: body === undefined ? null : JSON.stringify(body)
      })
      return { status: reply.status, body: (await reply.json().catch(() => undefined)) as any }
    }
    const login = await call("POST", "/v1/auth/dev/login", { subject: "worker-owner" })
    const token = login.body.token as string
    const slug = login.body.orgs?.[0]?.slug ?? (await call("GET", "/v1/me", undefined, token)).body.orgs[0].slug
    const project = await call("POST", `/v1/orgs/${slug}/projects`, { name: "hello" }, token)
    expect(project.status).toBe(201)
    const secret = await call(
      "PUT",
      `/v1/orgs/${slug}/projects/hello/secrets/GREETING`,
      { value: "from npm start" },
      token
    )
    expect(secret.status).toBe(200)
    const bytes = await Effect.runPromise(
      bundleOf([
        manifestEntry({ name: "hello" }),
        {
          name: "worker/index.js",
          content: `export default { async fetch(request, env) {
            const path = new URL(request.url).pathname
            if (path === "/boom") throw new Error("boom")
            if (path === "/loop") for (;;) {}
            if (path === "/wait") return new Promise((resolve) => setTimeout(() => resolve(new Response("waited")), 300))
            if (path === "/loopback")
              return fetch(${JSON.stringify(base + "/livez")}).then(
                (reply) => new Response("reached " + reply.status),
                () => new Response("rejected")
              )
            return new Response(env.GREETING + " " + request.headers.get("x-forwarded-proto"))
          } }`
        },
        { name: "assets/index.html", content: "home" }
      ])
    )
    const deployed = await fetch(`${base}/v1/orgs/${slug}/projects/hello/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(deployed.status).toBe(201)
    const host = project.body.hostname as string
    expect(await edgeGet(edgePort, host, "/api/hello")).toEqual({ status: 200, text: "from npm start http" })
    expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "home" })
    const boom = await edgeGet(edgePort, host, "/boom")
    expect(boom.status).toBe(500)
    expect(JSON.parse(boom.text)).toEqual({ code: "worker_exception", message: expect.any(String) })
    expect(boom.text).not.toMatch(/boom|index\.js|\bat /)
    // The API listens on loopback beside the node: a worker's fetch to it is refused inside the worker.
    expect(await edgeGet(edgePort, host, "/loopback")).toEqual({ status: 200, text: "rejected" })
    const invalid = await fetch(`${base}/v1/orgs/${slug}/projects/hello/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: await Effect.runPromise(
        bundleOf([manifestEntry({ name: "hello" }), { name: "worker/index.js", content: "export default {" }])
      )
    })
    expect(invalid.status).toBe(400)
    expect(((await invalid.json()) as any).details.reason).toBe("worker_invalid")
    // A body declared above 100 MiB is refused before any of it is read.
    const tooLarge = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = Http.request(
        {
          host: "127.0.0.1",
          port: edgePort,
          path: "/upload",
          method: "POST",
          headers: { host, "content-length": String(101 * 1024 * 1024) }
        },
        (response) => {
          let text = ""
          response.on("data", (chunk) => (text += chunk))
          response.on("end", () => {
            request.destroy()
            resolve({ status: response.statusCode!, text })
          })
        }
      )
      request.on("error", reject)
      request.flushHeaders()
    })
    expect({ status: tooLarge.status, code: JSON.parse(tooLarge.text).code }).toEqual({
      status: 413,
      code: "payload_too_large"
    })
    // An invocation's durationMs is its wall time: a worker that waits 300 ms took at least 250.
    expect(await edgeGet(edgePort, host, "/wait")).toEqual({ status: 200, text: "waited" })
    let waited: { durationMs: number } | undefined
    for (let tries = 0; waited === undefined && tries < 60; tries++) {
      const page = await call("GET", `/v1/orgs/${slug}/projects/hello/logs?limit=100`, undefined, token)
      waited = page.body.items?.find((event: any) => event.request.url.endsWith("/wait"))
      if (waited === undefined) await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect(waited?.durationMs).toBeGreaterThanOrEqual(250)
    // A busy loop is cut at SERVICE_WORKER_TIMEOUT; its shard is restarted and the project answers again.
    const loop = await edgeGet(edgePort, host, "/loop")
    expect({ status: loop.status, code: JSON.parse(loop.text).code }).toEqual({ status: 504, code: "worker_timeout" })
    let again = await edgeGet(edgePort, host, "/api/hello")
    for (let tries = 0; again.status !== 200 && tries < 60; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      again = await edgeGet(edgePort, host, "/api/hello")
    }
    expect(again).toEqual({ status: 200, text: "from npm start http" })
  }, 120_000)
  // Three pushes, two deploys and a clone against the binary: longer than the run's 30 s default on a loaded machine.
  it("a push to a repo with deployOnPush deploys its worker: the push says so and the edge runs the new code; the repo clones whole over HTTP", async () => {
    const { call } = await signIn(base, "pusher")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const project = await call("POST", `/v1/orgs/${slug}/projects`, { name: "pushed" })
    expect(project.status).toBe(201)
    const repos = `/v1/orgs/${slug}/projects/pushed/repos`
    expect((await call("POST", repos, { name: "site" })).status).toBe(201)
    expect((await call("PATCH", `${repos}/site`, { deployOnPush: true })).status).toBe(204)
    const pat = (await call("POST", "/v1/me/tokens", { name: "git" })).body.token as string
    const url = withToken(`${base}/git/${slug}/pushed/site.git`, pat)
    const worker = (word: string) => `export default { fetch() { return new Response("${word}") } }`
    const { dir, cleanup } = await scratch()
    try {
      const work = await workingCopy(join(dir, "work"), {
        "service.json": JSON.stringify({ name: "pushed" }),
        "worker/index.js": worker("first push")
      })
      const first = await git(work, ["push", url, "HEAD:refs/heads/main"])
      expect(first.code, first.stderr).toBe(0)
      expect(first.stderr).toMatch(/remote: deployed version 1, https?:\/\/pushed[.-]/u)
      const host = project.body.hostname as string
      expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "first push" })
      // A tree the runtime refuses never fails the push, and the live version keeps serving.
      await commitFiles(work, { "worker/index.js": "export default {" }, "broken")
      const refused = await git(work, ["push", url, "HEAD:refs/heads/main"])
      expect(refused.code, refused.stderr).toBe(0)
      expect(refused.stderr).toMatch(/remote: not deployed: invalid_bundle /u)
      expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "first push" })
      await commitFiles(work, { "worker/index.js": worker("second push") }, "second")
      const second = await git(work, ["push", url, "HEAD:refs/heads/main"])
      expect(second.stderr).toMatch(/remote: deployed version 2, /u)
      expect(await edgeGet(edgePort, host, "/")).toEqual({ status: 200, text: "second push" })
      // The clone's pack is written by git straight into the connection (a protocol v2 fetch): all of it arrives.
      const cloned = await git(dir, ["-c", "protocol.version=2", "clone", "-q", url, "cloned"])
      expect(cloned.code, cloned.stderr).toBe(0)
      const heads = await Promise.all([work, join(dir, "cloned")].map((at) => git(at, ["rev-parse", "HEAD"])))
      expect(heads[1]!.stdout).toBe(heads[0]!.stdout)
      expect((await git(join(dir, "cloned"), ["fsck", "--full"])).code).toBe(0)
    } finally {
      await cleanup()
    }
  }, 120_000)
})
