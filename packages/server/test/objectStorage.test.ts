import type { ChildProcess } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bundleOf, manifestEntry, startS3rver } from "@hostplane/testkit"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

type S3rver = Awaited<ReturnType<typeof startS3rver>>

/** Every object file s3rver holds for the bucket, as keys (it keeps an object as `<key>._S3rver_object`). */
const bucketKeys = (s3: S3rver) => {
  const bucketDir = join(s3.directory, "hostplane")
  if (!existsSync(bucketDir)) return []
  return readdirSync(bucketDir, { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith("._S3rver_object"))
    .map((path) => path.slice(0, -"._S3rver_object".length))
    .sort()
}

const edgeGet = (port: number, host: string, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, body }))
    })
    request.on("error", reject)
    request.end()
  })

const bundle = (page: string) =>
  Effect.runPromise(
    bundleOf([
      manifestEntry({ name: "site" }),
      { name: "assets/index.html", content: page },
      { name: "assets/about.html", content: `about ${page}` }
    ])
  )

/** The standalone binary (as `npm start` runs it) with `SERVICE_S3_URL` set: artifacts go to the bucket. */
describe("the server binary with SERVICE_S3_URL (s3rver)", () => {
  let s3: S3rver
  let child: ChildProcess | undefined
  let output: () => string
  let base: string
  let edgePort: number
  let dataDir: string
  beforeAll(async () => {
    s3 = await startS3rver()
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-s3-server-"))
    const port = await freePort()
    edgePort = await freePort()
    base = `http://127.0.0.1:${port}`
    const started = await startServer(
      base,
      {
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: "off",
        DATABASE_URL: "",
        SERVICE_S3_URL: s3.url,
        SERVICE_S3_ACCESS_KEY_ID: s3.accessKeyId,
        SERVICE_S3_SECRET_ACCESS_KEY: s3.secretAccessKey
      },
      480
    )
    child = started.child
    output = started.output
  }, 180_000)
  afterAll(async () => {
    await stopServer(child, "SIGKILL")
    await s3?.close()
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("a deployed bundle is served by the edge; its artifacts are in the bucket, not in <data dir>/artifacts", async () => {
    const { headers, call } = await signIn(base, "s3-operator")
    expect((await call("POST", "/v1/orgs", { name: "S3 org", slug: "s3-org" })).status).toBe(201)
    const project = await call("POST", "/v1/orgs/s3-org/projects", { name: "s3-site" })
    expect(project.status).toBe(201)
    const upload = await fetch(`${base}/v1/orgs/s3-org/projects/s3-site/deployments`, {
      method: "POST",
      headers: { authorization: headers.authorization, "content-type": "application/gzip" },
      body: await bundle("<h1>from the bucket</h1>")
    })
    expect(upload.status).toBe(201)
    const deployment = (await upload.json()) as { digest: string }
    const served = await edgeGet(edgePort, project.body.hostname, "/")
    expect(served).toEqual({ status: 200, body: "<h1>from the bucket</h1>" })
    const keys = bucketKeys(s3)
    expect(keys).toContain(`artifacts/sha256/${deployment.digest.slice(7)}`)
    expect(keys).toContain(`artifacts/index/${deployment.digest.slice(7)}.json`)
    expect(keys.filter((key) => key.startsWith("artifacts/tmp/"))).toEqual([])
    expect(existsSync(join(dataDir, "artifacts"))).toBe(false)
  }, 120_000)

  it("an artifact whose object vanished is a 503 artifact_store_unavailable at the edge, with a log line", async () => {
    const { headers, call } = await signIn(base, "s3-operator")
    const project = await call("POST", "/v1/orgs/s3-org/projects", { name: "s3-gone" })
    expect(project.status).toBe(201)
    const before = new Set(bucketKeys(s3))
    const upload = await fetch(`${base}/v1/orgs/s3-org/projects/s3-gone/deployments`, {
      method: "POST",
      headers: { authorization: headers.authorization, "content-type": "application/gzip" },
      body: await bundle("<h1>soon gone</h1>")
    })
    expect(upload.status).toBe(201)
    const deployment = (await upload.json()) as { digest: string }
    // The new inflated tar: the blob that is neither the bundle nor there before. Nothing has read it yet.
    const tar = bucketKeys(s3).find(
      (key) => !before.has(key) && key.startsWith("artifacts/sha256/") && !key.endsWith(deployment.digest.slice(7))
    )
    expect(tar).toBeDefined()
    rmSync(join(s3.directory, "hostplane", `${tar!}._S3rver_object`))
    rmSync(join(s3.directory, "hostplane", `${tar!}._S3rver_metadata.json`), { force: true })
    const reply = await edgeGet(edgePort, project.body.hostname, "/about.html")
    expect(reply.status).toBe(503)
    expect(JSON.parse(reply.body).code).toBe("artifact_store_unavailable")
    const deadline = Date.now() + 10_000
    while (!output().includes("the artifact store failed") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(output()).toContain("gone from the bucket")
    // The server is still up.
    expect((await fetch(`${base}/v1/config`)).status).toBe(200)
  }, 120_000)

  it("with the bucket down an upload is 503 artifact_store_unavailable, and nothing of it is kept", async () => {
    const { headers, call } = await signIn(base, "s3-operator")
    expect((await call("POST", "/v1/orgs/s3-org/projects", { name: "s3-down" })).status).toBe(201)
    await s3.stop()
    try {
      const upload = await fetch(`${base}/v1/orgs/s3-org/projects/s3-down/deployments`, {
        method: "POST",
        headers: { authorization: headers.authorization, "content-type": "application/gzip" },
        body: await bundle("<h1>never kept</h1>")
      })
      expect(upload.status).toBe(503)
      expect(((await upload.json()) as { code: string }).code).toBe("artifact_store_unavailable")
      expect((await call("GET", "/v1/orgs/s3-org/projects/s3-down/deployments")).body.items).toEqual([])
    } finally {
      await s3.start()
    }
  }, 120_000)
})
