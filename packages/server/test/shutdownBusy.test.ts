import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { afterAll, describe, expect, it } from "vitest"
import { descendantsNamed } from "../../node/test/support/Processes.ts"
import { freePort, signIn, startOnData, stopServer } from "./support/ServerProcess.ts"

/** A worker that prints a line, then waits an hour on a timer: workerd does not cancel it, only the edge's deadline ends it. */
const hangingWorker = `export default {
  async fetch(request) {
    const path = new URL(request.url).pathname
    console.log("waiting", path)
    await new Promise((resolve) => setTimeout(resolve, 3_600_000))
    return new Response("late")
  }
}`

/** The edge's answer to a request, or how its connection ended without one. */
const edgeRequest = (port: number, host: string, path: string) =>
  new Promise<{ readonly status: number; readonly text: string } | { readonly closed: string }>((resolve) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers: { host } }, (response) => {
      let text = ""
      response.on("data", (chunk) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, text }))
      response.on("error", (error) => resolve({ closed: String(error) }))
    })
    request.on("error", (error) => resolve({ closed: String(error) }))
    request.end()
  })

/**
 * decisions.md parts 13 and 15: a graceful stop while a worker never answers and a git client holds an SSH session
 * open. The stop waits for requests in flight, but no longer than the shutdown timeout, and a worker request never
 * outlives its deadline, so the process exits within the shorter of the two plus its teardown. The hung request is
 * answered either way: 504 `worker_timeout` at its deadline, with its invocation event (its line, outcome `timeout`);
 * or, when the shutdown timeout ends the wait first, 503 `worker_unavailable` once the stop takes the runtime away
 * under it, as when a shard dies under a request (no invocation event: the edge never saw the worker end). The SSH
 * client sees its session end, and the edge's request line is in the server's log.
 */
describe.each([
  {
    name: "the worker deadline comes first: the hung request is answered 504 worker_timeout, its event written",
    workerTimeoutS: 5,
    shutdownTimeoutS: 60,
    answer: { status: 504, code: "worker_timeout" },
    event: true
  },
  {
    name: "the shutdown timeout comes first: the hung request is answered 503 worker_unavailable as the runtime stops",
    workerTimeoutS: 60,
    shutdownTimeoutS: 3,
    answer: { status: 503, code: "worker_unavailable" },
    event: false
  }
])("SIGTERM with a hung worker request and an SSH git session open", (setup) => {
  const dataDir = mkdtempSync(join(tmpdir(), "hostplane-shutdown-busy-"))
  const keyDir = mkdtempSync(join(tmpdir(), "hostplane-shutdown-key-"))
  let child: ChildProcess | undefined
  let ssh: ChildProcess | undefined

  afterAll(async () => {
    ssh?.kill("SIGKILL")
    await stopServer(child, "SIGKILL")
    rmSync(dataDir, { recursive: true, force: true })
    rmSync(keyDir, { recursive: true, force: true })
  }, 60_000)

  it(`${setup.name}; the process exits 0 within that time plus a few seconds and the SSH session ends`, async () => {
    const edgePort = await freePort()
    const sshPort = await freePort()
    const env = {
      SERVICE_DNS_LISTEN: "off",
      SERVICE_EDGE_LISTEN: `127.0.0.1:${edgePort}`,
      SERVICE_GIT_SSH_LISTEN: `127.0.0.1:${sshPort}`,
      SERVICE_WORKER_TIMEOUT: `${setup.workerTimeoutS} seconds`,
      SERVICE_SHUTDOWN_TIMEOUT: `${setup.shutdownTimeoutS} seconds`
    }
    let server = await startOnData(dataDir, env)
    child = server.child
    const { call, token } = await signIn(() => server.base, "shutdown-busy")
    const slug = (await call("GET", "/v1/me")).body.orgs[0].slug as string
    const project = await call("POST", `/v1/orgs/${slug}/projects`, { name: "hangs" })
    expect(project.status).toBe(201)
    const bytes = await Effect.runPromise(
      bundleOf([manifestEntry({ name: "hangs" }), { name: "worker/index.js", content: hangingWorker }])
    )
    const deployed = await fetch(`${server.base}/v1/orgs/${slug}/projects/hangs/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(deployed.status).toBe(201)

    // A git client in an upload-pack session: it has read the advertisement and sends nothing more.
    await promisify(execFile)("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(keyDir, "id")])
    const publicKey = readFileSync(join(keyDir, "id.pub"), "utf8").trim()
    expect((await call("POST", "/v1/me/ssh-keys", { publicKey })).status).toBe(201)
    expect((await call("POST", `/v1/orgs/${slug}/projects/hangs/repos`, { name: "site" })).status).toBe(201)
    ssh = spawn(
      "ssh",
      [
        ...["-i", join(keyDir, "id"), "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no"],
        ...["-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes"],
        ...["-p", String(sshPort), "git@127.0.0.1", `git-upload-pack '${slug}/hangs/site.git'`]
      ],
      { stdio: ["pipe", "pipe", "pipe"] }
    )
    const sshExited = new Promise<number | null>((resolve) => ssh!.once("exit", (code) => resolve(code)))
    const advertised = await new Promise<string>((resolve) => {
      let seen = ""
      ssh!.stdout!.on("data", (chunk) => {
        seen += chunk
        if (seen.includes("0000")) resolve(seen)
      })
    })
    // An empty repository's advertisement is a flush alone; git now waits for the client's wants.
    expect(advertised.endsWith("0000")).toBe(true)
    expect(ssh.exitCode).toBe(null)

    const host = project.body.hostname as string
    const hung = edgeRequest(edgePort, host, "/hang")
    // The worker has the request once its line is printed; give it a moment to get there.
    await new Promise((resolve) => setTimeout(resolve, 1_500))

    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      server.child.once("exit", (code, signal) => resolve({ code, signal }))
    )
    const stoppedAt = Date.now()
    server.child.kill("SIGTERM")
    expect(await exited).toEqual({ code: 0, signal: null })
    const stopSeconds = (Date.now() - stoppedAt) / 1_000
    const bound = Math.min(setup.workerTimeoutS, setup.shutdownTimeoutS) + 5
    expect(stopSeconds).toBeLessThan(bound)

    const answer = await hung
    expect(answer).toMatchObject({ status: setup.answer.status })
    expect(JSON.parse((answer as { text: string }).text)).toMatchObject({ code: setup.answer.code })
    // The SSH client saw its session end with the server (it was waiting on git's next line, never sent).
    expect(
      await Promise.race([sshExited, new Promise((resolve) => setTimeout(() => resolve("running"), 5_000))])
    ).not.toBe("running")
    expect(server.output()).not.toContain("hostplane stopped on an error")
    const requestLines = server
      .output()
      .split("\n")
      .filter((line) => line.includes('"edge request"') && line.includes('"/hang"'))
    expect(requestLines).toHaveLength(1)
    expect(JSON.parse(requestLines[0]!)).toMatchObject({
      message: "edge request",
      annotations: { path: "/hang", status: setup.answer.status }
    })

    // The invocation's event was written before the exit: the restarted server lists it.
    server = await startOnData(dataDir, env)
    child = server.child
    // Its node's desired state holds the deployment: workerd is started with the server, before any worker request.
    let workerds: ReadonlyArray<number> = []
    for (let i = 0; i < 100 && workerds.length === 0; i++) {
      workerds = descendantsNamed("workerd")(server.child.pid!)
      if (workerds.length === 0) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(workerds).toHaveLength(1)
    const listed = await call("GET", `/v1/orgs/${slug}/projects/hangs/logs?limit=10`)
    expect(listed.status).toBe(200)
    const events = (listed.body.items as ReadonlyArray<Record<string, any>>).filter(
      (event) => new URL(event["request"].url).pathname === "/hang"
    )
    expect(events).toHaveLength(setup.event ? 1 : 0)
    if (setup.event) {
      expect(events[0]).toMatchObject({ outcome: "timeout", response: null })
      expect(events[0]!["logs"]).toMatchObject([{ level: "log", message: ["waiting", "/hang"] }])
    }
  }, 360_000)
})
