import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bin, buildBundle, hostplane } from "./support/Cli.ts"
import { tempDirs } from "./support/TempDirs.ts"

const tempDir = tempDirs()

const worker = (version: number) => `
export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    if (url.pathname === "/secret") return new Response(env.API_KEY ?? "absent")
    if (url.pathname === "/via-assets") return env.ASSETS.fetch(new URL("/style.css", request.url))
    if (url.pathname === "/db") {
      try {
        await env.db.query("select 1")
        return new Response("queried")
      } catch (error) {
        return new Response(error.message, { status: 500 })
      }
    }
    if (url.pathname === "/throw") throw new TypeError("thrown on purpose")
    console.log("worker saw", url.pathname)
    return Response.json({ version: ${version}, method: request.method, path: url.pathname, url: request.url })
  }
}
`

/** Every process below `pid` (bubblewrap, workerd), from /proc. */
const descendants = (pid: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const name of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${name}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)])
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<number> = []
  const visit = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      found.push(child)
      visit(child)
    }
  }
  visit(pid)
  return found
}

/** Alive and not a zombie waiting for its parent to read its status. */
const running = (pid: number) => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

const until = async <A>(what: string, probe: () => Promise<A | undefined>, waitMs = 60_000): Promise<A> => {
  const deadline = Date.now() + waitMs
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const value = await probe()
      if (value !== undefined) return value
    } catch (error) {
      last = error
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`timed out waiting for ${what}${last === undefined ? "" : `: ${String(last)}`}`)
}

/** `hostplane dev` of decisions.md parts 13 and 17, run as the bundled bin on a folder, with the real workerd. */
describe("hostplane dev", { timeout: 240_000 }, () => {
  let dir: string
  let child: ChildProcess
  let stdout = ""
  let stderr = ""
  let url: string
  const write = (path: string, text: string) => {
    Fs.mkdirSync(Path.dirname(Path.join(dir, path)), { recursive: true })
    // Written beside and renamed, as editors save: the test never depends on a half-written file being skipped.
    Fs.writeFileSync(Path.join(dir, `${path}.tmp`), text)
    Fs.renameSync(Path.join(dir, `${path}.tmp`), Path.join(dir, path))
  }
  const get = (path: string, init?: RequestInit) => fetch(`${url}${path}`, init)
  const json = async (path: string) => (await get(path)).json() as Promise<Record<string, unknown>>

  beforeAll(async () => {
    await buildBundle()
    dir = tempDir("hostplane-dev-")
    write("service.json", JSON.stringify({ name: "devsite", database: true }))
    write("worker/index.js", worker(1))
    write("assets/index.html", "<h1>home</h1>")
    write("assets/style.css", "body { color: red }")
    write(".dev.vars", '# local secrets\nexport API_KEY="first value"\nOTHER=unused # a comment\n')
    child = spawn(process.execPath, [bin, "dev", dir, "--port", "0"], {
      env: { PATH: process.env["PATH"] ?? "", HOME: Os.tmpdir() },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout!.on("data", (chunk) => (stdout += chunk))
    child.stderr!.on("data", (chunk) => (stderr += chunk))
    url = await until(
      "the dev server's address",
      async () => {
        if (child.exitCode !== null) throw new Error(`hostplane dev exited ${child.exitCode}: ${stderr}`)
        return /on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1]
      },
      180_000
    )
  }, 300_000)
  afterAll(() => {
    if (child?.exitCode === null) child.kill("SIGKILL")
  })

  it("serves assets first, every other path and every non-GET method through the worker, env.ASSETS", async () => {
    const home = await get("/")
    expect(home.status).toBe(200)
    expect(home.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(await home.text()).toBe("<h1>home</h1>")
    const css = await get("/style.css")
    expect(css.headers.get("content-type")).toBe("text/css; charset=utf-8")
    expect(await css.text()).toBe("body { color: red }")
    const api = await json("/api/hello?x=1")
    expect(api).toEqual({ version: 1, method: "GET", path: "/api/hello", url: `${url}/api/hello?x=1` })
    expect(((await (await get("/", { method: "POST", body: "x" })).json()) as { method: string }).method).toBe("POST")
    expect(await (await get("/via-assets")).text()).toBe("body { color: red }")
    // One line per invocation, with the worker's console lines beneath.
    await until("the invocation lines", async () =>
      stdout.includes("  log   worker saw /api/hello") ? true : undefined
    )
    expect(stdout).toMatch(/GET {2}\/api\/hello\?x=1 {2}200 {2}ok/)
  })

  it("gives the worker its secrets from .dev.vars and rejects add-on calls inside the worker", async () => {
    expect(await (await get("/secret")).text()).toBe("first value")
    const db = await get("/db")
    expect(db.status).toBe(500)
    expect(await db.text()).toMatch(/^not_available_in_dev: env\.db\.query\(\)/)
    write(".dev.vars", "API_KEY=second\n")
    await until("the new secret", async () => ((await (await get("/secret")).text()) === "second" ? true : undefined))
  })

  it("answers a thrown exception with the worker_exception envelope and prints its stack", async () => {
    const thrown = await get("/throw")
    expect(thrown.status).toBe(500)
    expect(await thrown.json()).toEqual({ code: "worker_exception", message: "the worker threw an exception" })
    await until("the exception", async () => (stdout.includes("  TypeError: thrown on purpose") ? true : undefined))
  })

  it("reloads a changed worker, and keeps serving the last good version while the folder is broken", async () => {
    write("worker/index.js", worker(2))
    await until("version 2", async () => ((await json("/api/x")).version === 2 ? true : undefined))
    expect(stdout).toContain("⟳ reloaded worker/index.js")

    const before = stderr.length
    write("worker/index.js", "export default { fetch( {\n")
    await until("the runtime's message", async () =>
      stderr.slice(before).includes("still serving") ? true : undefined
    )
    expect(stderr.slice(before)).toMatch(/✗ worker\/index\.js does not load: .*\n(.*\n)*.*SyntaxError/)
    expect((await json("/api/x")).version).toBe(2)

    write("service.json", "{ not json")
    await until("the manifest's message", async () =>
      stderr.slice(before).includes("✗ service.json is not valid JSON") ? true : undefined
    )
    expect((await json("/api/x")).version).toBe(2)

    write("service.json", JSON.stringify({ name: "devsite", database: true, workerFirst: true }))
    write("worker/index.js", worker(3))
    await until("version 3", async () => ((await json("/api/x")).version === 3 ? true : undefined))
    // workerFirst: the worker answers the paths assets would.
    expect((await json("/")).version).toBe(3)
  })

  it("stops workerd with it on Ctrl-C", async () => {
    const below = descendants(child.pid!)
    expect(below.length).toBeGreaterThan(0)
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    child.kill("SIGINT")
    expect(await exited).toBe(130)
    await until("workerd to be gone", async () => (below.every((pid) => !running(pid)) ? true : undefined), 20_000)
    await expect(get("/")).rejects.toThrow()
  })

  it("outside the checkout without workerd: one line naming what to install, exit 1", async () => {
    const installed = tempDir("hostplane-dev-installed-")
    const cli = Path.join(import.meta.dirname, "..")
    for (const path of [
      "package.json",
      "bin/hostplane.js",
      "dist/hostplane.cjs",
      "worker/router.js",
      "worker/entry.js"
    ]) {
      Fs.mkdirSync(Path.dirname(Path.join(installed, path)), { recursive: true })
      Fs.copyFileSync(Path.join(cli, path), Path.join(installed, path))
    }
    const run = await hostplane(["dev", dir], {
      env: { PATH: Path.dirname(process.execPath) },
      bin: Path.join(installed, "bin/hostplane.js")
    })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe(
      "error dev_failed: hostplane dev needs workerd, the Workers runtime: install it with `npm install -g workerd@1.20261117.1` (or set HOSTPLANE_WORKERD to a workerd binary)\n"
    )
    const wrong = await hostplane(["dev", dir], {
      env: { PATH: Path.dirname(process.execPath), HOSTPLANE_WORKERD: Path.join(installed, "nothing-here") },
      bin: Path.join(installed, "bin/hostplane.js")
    })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toMatch(/^error dev_failed: HOSTPLANE_WORKERD=\S+nothing-here is not an executable file\n$/)
  })
})
