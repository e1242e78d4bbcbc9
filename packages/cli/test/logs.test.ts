import { Logs } from "@hostplane/core"
import { layerMemory } from "@hostplane/testkit"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as Os from "node:os"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, startTestServer, type TestServer, unique } from "../../http/test/support/TestServer.ts"
import { bin, buildBundle, hostplane } from "./support/Cli.ts"
import { tempDirs } from "./support/TempDirs.ts"

const tempDir = tempDirs()

/** `hostplane logs` of decisions.md part 13, run as the bundled bin against a server on HTTP. */
describe("hostplane logs", { timeout: 180_000 }, () => {
  let server: TestServer
  let env: Record<string, string>
  let projectId: string
  let target: ReadonlyArray<string>
  const api = client(() => server.url)
  const record = (inputs: ReadonlyArray<Partial<Logs.LogEventInput>>) =>
    server.run(
      Effect.flatMap(Logs.RuntimeLogs, (logs) =>
        logs.recordAll(
          inputs.map((input) => ({
            projectId,
            deploymentId: "dep_cli",
            timestamp: Date.now(),
            outcome: "ok" as const,
            request: { method: "GET", url: "http://site.apps.localhost/api/hello" },
            response: { status: 200 },
            durationMs: 3,
            logs: [],
            exceptions: [],
            ...input
          }))
        )
      )
    )

  beforeAll(async () => {
    await buildBundle()
    server = await startTestServer(Layer.fresh(layerMemory))
    const { token } = await api.login(unique("logs"))
    const org = unique("team")
    expect((await api.post("/v1/orgs", { name: "Team", slug: org }, { token })).status).toBe(201)
    const project = await api.post(`/v1/orgs/${org}/projects`, { name: "site" }, { token })
    projectId = project.body.id
    target = ["--org", org, "--project", "site"]
    env = {
      HOSTPLANE_URL: server.url,
      HOSTPLANE_TOKEN: token,
      HOSTPLANE_CONFIG_DIR: tempDir("hostplane-cli-logs-")
    }
    await record([
      { timestamp: Date.now() - 2000, logs: [{ level: "log", message: ["hello", { n: 1 }], timestamp: Date.now() }] },
      {
        timestamp: Date.now() - 1000,
        outcome: "exception",
        response: null,
        exceptions: [{ name: "TypeError", message: "boom", stack: "TypeError: boom\n    at fetch (index.js:2:9)" }]
      }
    ])
  }, 300_000)
  afterAll(async () => {
    await server?.close()
  })

  it("prints one line per invocation, oldest first, its console lines and exceptions beneath", async () => {
    const run = await hostplane(["logs", ...target], { env })
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^\S+Z {2}GET {2}http:\/\/site\.apps\.localhost\/api\/hello {2}200 {2}ok {2}3ms$/u)
    expect(lines[1]).toBe('  log   hello {"n":1}')
    expect(lines[2]).toMatch(/ {2}GET {2}\S+ {2}- {2}exception {2}3ms$/u)
    expect(lines.slice(3)).toEqual(["  TypeError: boom", "    at fetch (index.js:2:9)"])
  })

  it("--json prints the page as the API answers it; --outcome filters", async () => {
    const run = await hostplane(["logs", ...target, "--json", "--outcome", "exception"], { env })
    expect(run.code, run.stderr).toBe(0)
    const page = JSON.parse(run.stdout)
    expect(page.nextCursor).toBeNull()
    expect(page.items.map((event: any) => event.outcome)).toEqual(["exception"])
    const bad = await hostplane(["logs", ...target, "--outcome", "fine"], { env })
    expect(bad.code).toBe(2)
  })

  it("--follow prints the recent invocations, then new ones as they are recorded", async () => {
    const child = spawn(process.execPath, [bin, "logs", ...target, "--follow", "--json"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: Os.tmpdir(), ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    const lines = () => stdout.split("\n").filter((line) => line !== "")
    const until = async (done: () => boolean) => {
      for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 100))
      if (!done()) throw new Error(`not printed: ${stdout} ${stderr}`)
    }
    try {
      await until(() => lines().length >= 2)
      const followed = () => lines().some((line) => line.includes('"followed"'))
      // Recorded until one is printed (a second for each to come): the stream may still be opening when the first
      // is recorded.
      for (let i = 0; i < 30 && !followed(); i++) {
        await record([{ logs: [{ level: "info", message: ["followed"], timestamp: Date.now() }] }])
        for (let wait = 0; wait < 20 && !followed(); wait++) await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await until(followed)
      const events = lines().map((line) => JSON.parse(line))
      expect(events[0].logs[0].message).toEqual(["hello", { n: 1 }])
      expect(events[1].outcome).toBe("exception")
      expect(events[2].logs[0].message).toEqual(["followed"])
      expect(new Set(events.map((event: any) => event.id)).size).toBe(events.length)
    } finally {
      child.kill("SIGKILL")
    }
  })
})
