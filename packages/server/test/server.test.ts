import { type ChildProcess, execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import * as Http from "node:http"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type FakeNameCom, startFakeNameCom } from "@hostplane/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { descendantsNamed } from "../../node/test/support/Processes.ts"
import { freePort, spawnScript } from "./support/ServerProcess.ts"

/** The standalone binary, exactly as `npm start` runs it, on a fresh data directory. */
describe("the server binary on its embedded defaults", () => {
  let child: ChildProcess
  let base: string
  let edgePort: number
  let dnsPort: number
  let sshPort: number
  let dataDir: string
  let output = ""
  let exited: Promise<number | null>
  let registrar: FakeNameCom
  beforeAll(async () => {
    registrar = await startFakeNameCom()
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-server-"))
    const port = await freePort()
    edgePort = await freePort()
    dnsPort = await freePort()
    sshPort = await freePort()
    base = `http://127.0.0.1:${port}`
    child = spawnScript("start", {
      env: {
        ...process.env,
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
        SERVICE_DNS_LISTEN: `127.0.0.1:${dnsPort}`,
        SERVICE_GIT_SSH_LISTEN: `127.0.0.1:${sshPort}`,
        DATABASE_URL: "",
        // The one provider set: domain checks go to a loopback fake of Name.com's API.
        SERVICE_REGISTRAR_URL: registrar.url,
        SERVICE_REGISTRAR_USERNAME: registrar.username,
        SERVICE_REGISTRAR_TOKEN: registrar.token
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout!.on("data", (chunk) => (output += chunk))
    child.stderr!.on("data", (chunk) => (output += chunk))
    exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)))
    // On a loaded machine (several suites on 2 cores) the embedded PostgreSQL alone can take a minute to start: 240
    // refused polls (about 60 s) were not always enough.
    const deadline = Date.now() + 110_000
    while (Date.now() < deadline) {
      const up = await fetch(`${base}/v1/config`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false
      )
      // Up once it answers and has announced itself (log lines reach stdout in batches, a moment after).
      if (up && output.includes("hostplane is up")) return
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    throw new Error(`server did not start:\n${output}`)
  }, 120_000)
  afterAll(async () => {
    await registrar?.close()
    child.kill("SIGKILL")
    rmSync(dataDir, { recursive: true, force: true })
  })

  it("runs no workerd while it holds no deployment (the runtime starts with the first)", () => {
    expect(descendantsNamed("workerd")(child.pid!)).toEqual([])
  })

  it("serves /v1 on SERVICE_LISTEN, with dev login on and announced at start", async () => {
    expect(output).toContain("dev login is ON")
    const login = await fetch(`${base}/v1/auth/dev/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subject: "operator" })
    })
    expect(login.status).toBe(200)
  })

  it("keeps its embedded PostgreSQL durable: the cluster runs with fsync on", () => {
    // PostgreSQL writes the command line it runs under to postmaster.opts; only the test support turns fsync off.
    const command = readFileSync(join(dataDir, "pg", "data", "postmaster.opts"), "utf8")
    expect(command).toContain("listen_addresses=127.0.0.1")
    expect(command).not.toContain("fsync=off")
  })

  it("logs at start the API, docs and edge URLs and where the embedded PostgreSQL lives; GET /v1 answers", async () => {
    const line = output.split("\n").find((entry) => entry.includes("hostplane is up"))!
    const [, fields] = JSON.parse(line).message as [string, Record<string, unknown>]
    expect(fields).toMatchObject({
      api: `${base}/v1`,
      docs: `${base}/v1/docs`,
      openapi: `${base}/v1/openapi.json`,
      edge: `http://127.0.0.1:${edgePort}`,
      database: `embedded PostgreSQL in ${join(dataDir, "pg")}`
    })
    const index = await fetch(`${base}/v1`)
    expect(index.status).toBe(200)
    expect(await index.json()).toMatchObject({ docs: expect.stringMatching(/\/v1\/docs$/) })
    expect((await fetch(fields.docs as string)).status).toBe(200)
  })

  it("answers DNS on SERVICE_DNS_LISTEN: a zone made through /v1 is served to dig", async () => {
    const post = (path: string, body: unknown, token?: string) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body)
      })
    const { token } = (await (await post("/v1/auth/dev/login", { subject: "dns-operator" })).json()) as {
      token: string
    }
    expect((await post("/v1/orgs", { name: "DNS", slug: "dns-org" }, token)).status).toBe(201)
    expect((await post("/v1/orgs/dns-org/dns/zones", { name: "served.example" }, token)).status).toBe(200)
    let answer = ""
    for (let i = 0; i < 40 && !answer.includes("hostmaster.served.example."); i++) {
      answer = execFileSync("dig", ["@127.0.0.1", "-p", String(dnsPort), "+short", "served.example", "SOA"]).toString()
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(answer).toContain("ns1.hostplane.localhost. hostmaster.served.example.")
  })

  it("writes one JSON log line per request, carrying the X-Request-Id", async () => {
    const reply = await fetch(`${base}/v1/me`)
    const requestId = reply.headers.get("x-request-id")!
    await new Promise((resolve) => setTimeout(resolve, 200))
    const lines = output.split("\n").filter((line) => line.includes(requestId))
    expect(lines).toHaveLength(1)
    const entry = JSON.parse(lines[0]!)
    expect(entry.annotations).toMatchObject({ method: "GET", path: "/v1/me", status: 401, requestId })
  })

  it("answers a warm GET /v1/me in front of the app with the app's own head, body, request id and log line", async () => {
    const { token } = (await (
      await fetch(`${base}/v1/auth/dev/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ subject: "lane-user", name: "Lane" })
      })
    ).json()) as { token: string }
    const get = (path: string, requestId: string) =>
      new Promise<{ status: number; raw: Array<string>; body: string }>((resolve, reject) => {
        Http.get(
          `${base}${path}`,
          { headers: { authorization: `Bearer ${token}`, "x-request-id": requestId } },
          (r) => {
            let body = ""
            r.setEncoding("utf8")
            r.on("data", (chunk) => (body += chunk))
            r.on("end", () => resolve({ status: r.statusCode!, raw: r.rawHeaders, body }))
          }
        ).on("error", reject)
      })
    // With a query string the request goes the whole way (router, endpoint); the bare path is the lane's once warm.
    const whole = await get("/v1/me?via=app", "lane-test-app-0001")
    const lane = await get("/v1/me", "lane-test-lane-0001")
    expect(whole.status).toBe(200)
    expect(lane.status).toBe(200)
    expect(lane.body).toBe(whole.body)
    expect(JSON.parse(lane.body).user).toMatchObject({ subject: "lane-user", name: "Lane" })
    // The same header names, in the same order, with the same values but for the date and the id each asked for.
    const head = (raw: Array<string>) =>
      raw.map((value, i) => (i % 2 === 1 && /^(date|x-request-id)$/i.test(raw[i - 1]!) ? "*" : value))
    expect(head(lane.raw)).toEqual(head(whole.raw))
    expect(lane.raw[lane.raw.findIndex((name) => /^x-request-id$/i.test(name)) + 1]).toBe("lane-test-lane-0001")
    const generated = await get("/v1/me", "bad id")
    const id = generated.raw[generated.raw.findIndex((name) => /^x-request-id$/i.test(name)) + 1]
    expect(id).toMatch(/^req_[0-9a-f]{32}$/)
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const [requestId, path] of [
      ["lane-test-app-0001", "/v1/me"],
      ["lane-test-lane-0001", "/v1/me"],
      [id!, "/v1/me"]
    ] as const) {
      const lines = output.split("\n").filter((line) => line.includes(requestId))
      expect(lines).toHaveLength(1)
      const entry = JSON.parse(lines[0]!)
      expect(entry.message).toBe("request")
      expect(entry.annotations).toMatchObject({ method: "GET", path, status: 200, requestId })
      expect(lines[0]).not.toContain(token)
    }
  })

  it("without SERVICE_NODE_TOKEN every /v1/node route answers 501 node_api_off, a node's token or not", async () => {
    const routes: Array<[string, string, unknown?]> = [
      ["GET", "/v1/node/state"],
      ["GET", "/v1/node/database/authority"],
      ["POST", "/v1/node/access/check", { projectId: "prj_x", host: "a.example" }],
      ["POST", "/v1/node/access/code", { host: "a.example", code: "x" }],
      ["POST", "/v1/node/access/password", { projectId: "prj_x", host: "a.example", password: "x" }],
      ["POST", "/v1/node/auth/signin", { projectId: "prj_x", host: "a.example", method: "GET", url: "/" }],
      ["POST", "/v1/node/auth/user", { projectId: "prj_x", session: "x" }]
    ]
    for (const [method, path, body] of routes) {
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: "Bearer anything", "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const code = ((await reply.json()) as { code: string }).code
      expect({ path, status: reply.status, code }).toEqual({ path, status: 501, code: "node_api_off" })
    }
  })

  it("runs the edge on SERVICE_EDGE_LISTEN: an unknown Host is 404 unknown_hostname", async () => {
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = Http.request(
        { host: "127.0.0.1", port: edgePort, path: "/", headers: { host: "nobody.example.test" } },
        (response) => {
          let body = ""
          response.on("data", (chunk) => (body += chunk))
          response.on("end", () => resolve({ status: response.statusCode!, body }))
        }
      )
      request.on("error", reject)
      request.end()
    })
    expect(reply.status).toBe(404)
    expect(JSON.parse(reply.body).code).toBe("unknown_hostname")
  })

  it("never logs an invite token: the token segment of the path is masked", async () => {
    const token = "Zm9yZ2VkLWludml0ZS10b2tlbi1ub3QtcmVhbC0xMjM0NTY"
    const reply = await fetch(`${base}/v1/invites/${token}`)
    expect(reply.status).toBe(404)
    const requestId = reply.headers.get("x-request-id")!
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(output).not.toContain(token)
    const line = output.split("\n").find((entry) => entry.includes(requestId))!
    expect(JSON.parse(line).annotations.path).toBe("/v1/invites/***")
  })

  it("serves git over SSH on SERVICE_GIT_SSH_LISTEN with a host key generated into the data dir (mode 0600)", async () => {
    const banner = await new Promise<string>((resolve, reject) => {
      const socket = connect(sshPort, "127.0.0.1")
      socket.once("data", (chunk) => {
        resolve(chunk.toString())
        socket.destroy()
      })
      socket.once("error", reject)
    })
    expect(banner).toMatch(/^SSH-2\.0-/)
    expect(statSync(join(dataDir, "ssh_host_ecdsa_key")).mode & 0o777).toBe(0o600)
    const line = output.split("\n").find((entry) => entry.includes("hostplane is up"))!
    const [, fields] = JSON.parse(line).message as [string, Record<string, unknown>]
    expect(fields.gitSsh).toBe(`127.0.0.1:${sshPort}`)
  })

  it("keeps its data under SERVICE_DATA_DIR", () => {
    expect(readdirSync(dataDir)).toContain("pg")
  })

  it("seals secrets with the key file it created in SERVICE_DATA_DIR (mode 0600); the value stays out of its log", async () => {
    const json = { "content-type": "application/json" }
    const login = await fetch(`${base}/v1/auth/dev/login`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ subject: "sealer" })
    })
    const { token } = (await login.json()) as { token: string }
    const headers = { ...json, authorization: `Bearer ${token}` }
    await fetch(`${base}/v1/orgs`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "Sealed", slug: "sealed" })
    })
    await fetch(`${base}/v1/orgs/sealed/projects`, { method: "POST", headers, body: JSON.stringify({ name: "vault" }) })
    const value = "binary-secret-7c1e-value"
    const put = await fetch(`${base}/v1/orgs/sealed/projects/vault/secrets/API_KEY`, {
      method: "PUT",
      headers,
      body: JSON.stringify({ value })
    })
    expect(put.status).toBe(200)
    expect(await put.text()).not.toContain(value)
    expect(statSync(join(dataDir, "seal.key")).mode & 0o777).toBe(0o600)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(output).not.toContain(value)
  })

  it("asks the registrar of SERVICE_REGISTRAR_* (Name.com API v4, Basic auth) for domain checks", async () => {
    const login = await fetch(`${base}/v1/auth/dev/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subject: "domain-buyer" })
    }).then((r) => r.json() as Promise<{ token: string }>)
    const headers = { authorization: `Bearer ${login.token}`, "content-type": "application/json" }
    const me = await fetch(`${base}/v1/me`, { headers }).then(
      (r) => r.json() as Promise<{ orgs: Array<{ slug: string }> }>
    )
    const check = await fetch(`${base}/v1/orgs/${me.orgs[0]!.slug}/domains/check`, {
      method: "POST",
      headers,
      body: JSON.stringify({ names: ["server-test.example"] })
    })
    expect(check.status).toBe(200)
    expect(await check.json()).toEqual({
      items: [{ name: "server-test.example", available: true, premium: false, priceCents: 1299, renewalCents: 1499 }]
    })
    expect(registrar.requests.at(-1)).toMatchObject({ path: "/v4/domains:checkAvailability", authorized: true })
  })

  it("on SIGTERM finishes the request in flight, then exits 0", async () => {
    const url = new URL(`${base}/v1/auth/dev/login`)
    const body = JSON.stringify({ subject: "late-request" })
    const reply = new Promise<number>((resolve, reject) => {
      const request = Http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          headers: { "content-type": "application/json", "content-length": body.length }
        },
        (response) => {
          response.resume()
          resolve(response.statusCode!)
        }
      )
      request.on("error", reject)
      request.write(body.slice(0, 5))
      setTimeout(() => {
        child.kill("SIGTERM")
        setTimeout(() => request.end(body.slice(5)), 300)
      }, 100)
    })
    expect(await reply).toBe(200)
    expect(await exited).toBe(0)
  }, 30_000)
})
