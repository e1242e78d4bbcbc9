import { type ChildProcess, execFile, spawn, type StdioOptions } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdir } from "node:fs/promises"
import { createServer } from "node:net"
import { join, resolve } from "node:path"
import { promisify } from "node:util"

/** The repository root, where `npm start` runs. */
export const root = join(import.meta.dirname, "../../../..")

/** The kernel's ephemeral range: outgoing connections and `listen(0)` take their ports from it. */
const ephemeralLow = (() => {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0])
  } catch {
    return 32768
  }
})()

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer()
    probe.once("error", () => resolve(false))
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)))
  })

/** Ports this process handed out: a server binds them seconds later, so a later pick must not take one again. */
const handedOut = new Set<number>()

/**
 * A port free on 127.0.0.1, picked below the ephemeral range: a port from `listen(0)` goes back to that range once the
 * probe closes, and any outgoing connection may take it before the server binds it (EADDRINUSE). Below the range only
 * another explicit bind competes: each vitest worker picks from its own slice of it (`VITEST_POOL_ID`), and never
 * hands out one port twice, so two servers starting at once in the run cannot be given the same port.
 */
export const freePort = async (): Promise<number> => {
  const low = Math.max(1024, ephemeralLow - 16384)
  const slices = 8
  const size = Math.floor((ephemeralLow - low) / slices)
  const slot = (Math.max(1, Number(process.env["VITEST_POOL_ID"] ?? "1") || 1) - 1) % slices
  const start = low + slot * size
  if (handedOut.size > size / 2) handedOut.clear()
  for (;;) {
    const port = start + Math.floor(Math.random() * size)
    if (handedOut.has(port)) continue
    if (await bindable(port)) {
      handedOut.add(port)
      return port
    }
  }
}

/** Where the vitest run's global setup serves its prepared clusters (`TestDatabase.setupVariable`). */
const setupVariable = "HOSTPLANE_TEST_PG_SETUP"

let preparedCluster: Promise<string> | undefined

/**
 * A server about to start its own embedded PostgreSQL (no `DATABASE_URL`, no fsync, the default schema) on a data
 * folder that holds no cluster yet gets a copy of the run's prepared one (`globalSetup.ts`: initdb and hostplane's
 * migrations, as a first start leaves them), owner and modes kept (`cp -a`): the server then starts on it as on its
 * second start, saving about 1.5 CPU-s of initdb and migrations. `server.test.ts` and `operations.test.ts` spawn the
 * binary themselves and still make their cluster from nothing, as `npm start` does.
 */
const seedEmbeddedCluster = async (env: Record<string, string | undefined>) => {
  const setup = env[setupVariable] ?? ""
  const dataDir = env["SERVICE_DATA_DIR"] ?? ""
  const usesPrepared =
    setup !== "" &&
    dataDir !== "" &&
    (env["DATABASE_URL"] ?? "").trim() === "" &&
    env["SERVICE_PG_EMBEDDED_DURABLE"] === "false" &&
    (env["SERVICE_PG_SCHEMA"] ?? "").trim() === ""
  const target = resolve(root, dataDir, "pg")
  if (!usesPrepared || existsSync(target)) return
  preparedCluster ??= fetch(new URL("server-cluster", setup), { method: "POST" }).then(async (reply) => {
    if (!reply.ok) throw new Error(await reply.text())
    return ((await reply.json()) as { readonly directory: string }).directory
  })
  const from = await preparedCluster
  await mkdir(resolve(root, dataDir), { recursive: true })
  await promisify(execFile)("cp", ["-a", from, target])
}

/**
 * Runs a script of the root `package.json` (`start`, the standalone binary; `start:node`, the remote node's) exactly
 * as `npm run` does: its line through `sh -c` in the repository root with `node_modules/.bin` first on the `PATH`, so
 * every test of a binary runs the command its users run, flags included. The line `exec`s node, so the child is the
 * binary's own process: its signals and exit code.
 */
export const spawnScript = (
  script: "start" | "start:node",
  options: { readonly env: Record<string, string | undefined>; readonly stdio?: StdioOptions }
): ChildProcess => {
  const scripts = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> })
    .scripts
  const path = options.env["PATH"] ?? process.env["PATH"] ?? "/usr/bin:/bin"
  return spawn("/bin/sh", ["-c", scripts[script]!], {
    cwd: root,
    env: { ...options.env, PATH: `${join(root, "node_modules", ".bin")}:${path}` },
    stdio: options.stdio ?? ["ignore", "pipe", "pipe"]
  })
}

export interface ServerProcess {
  readonly child: ChildProcess
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string
}

/**
 * The standalone binary as `npm start` runs it, with `env`; answers once `GET <base>/v1/config` does. Git over SSH gets
 * a free port unless `env` names one, so servers of parallel tests never race for the default 2222. An embedded
 * PostgreSQL skips fsync unless `env` says otherwise: the test throws its cluster away, and a crash test kills only the
 * node process, so the operating system still holds every write (`server.test.ts` starts on the true defaults).
 * `tries` polls 250 ms apart: a first start (initdb, migrations) takes over a minute on a loaded 2-core machine.
 */
export const startServer = async (base: string, env: Record<string, string>, tries = 600): Promise<ServerProcess> => {
  let output = ""
  const sshListen = `127.0.0.1:${await freePort()}`
  const childEnv = { ...process.env, SERVICE_GIT_SSH_LISTEN: sshListen, SERVICE_PG_EMBEDDED_DURABLE: "false", ...env }
  await seedEmbeddedCluster(childEnv)
  const child = spawnScript("start", { env: childEnv })
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  // Settles once the process exited and its output was read to the end.
  const closed = new Promise((resolve) => child.once("close", resolve))
  for (let i = 0; i < tries && child.exitCode === null && child.signalCode === null; i++) {
    const up = await fetch(`${base}/v1/config`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false
    )
    if (up) return { child, output: () => output }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  child.kill("SIGKILL")
  await closed
  throw new ServerDidNotStart(output)
}

/** The server exited or never answered; `output` is what it wrote. */
export class ServerDidNotStart extends Error {
  readonly output: string
  constructor(output: string) {
    super(`server did not start:\n${output}`)
    this.output = output
  }
}

/** A probed free port is only free until someone else binds it: another process may take it before the server does. */
const lostAPortRace = (error: unknown) => error instanceof ServerDidNotStart && error.output.includes("EADDRINUSE")

/**
 * The standalone binary on `dataDir` with its own embedded PostgreSQL and free ports for every listener, `env` on top:
 * what a crash test starts, kills and starts again on the same data.
 */
export const startOnData = async (
  dataDir: string,
  env: Record<string, string>,
  tries?: number
): Promise<{ base: string; child: ChildProcess; output: () => string }> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(dataDir, env, tries)
    } catch (error) {
      if (attempt === 3 || !lostAPortRace(error)) throw error
    }
  }
}

const startOnFreePorts = async (dataDir: string, env: Record<string, string>, tries?: number) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const started = await startServer(
    base,
    {
      SERVICE_DATA_DIR: dataDir,
      SERVICE_LISTEN: `127.0.0.1:${port}`,
      SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
      SERVICE_DNS_LISTEN: `127.0.0.1:${await freePort()}`,
      DATABASE_URL: "",
      ...env
    },
    tries
  )
  return { base, child: started.child, output: started.output }
}

/** Signals a server started by `startOnData` and waits for it to exit (nothing when it already has). */
export const stopServer = async (child: ChildProcess | undefined, signal: NodeJS.Signals) => {
  // A child killed by a signal has a `signalCode` and no `exitCode`: it has exited all the same.
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill(signal)
  await exited
}

/** A JSON answer: its status and parsed body (`undefined` when empty). */
export interface Reply {
  readonly status: number
  // Tests read the fields they check; the spec's shapes are pinned by the http package's own tests.
  readonly body: any
}

/**
 * Signs a dev user in on a running server (`POST /v1/auth/dev/login`) and answers their bearer headers and a `call`
 * that sends JSON with them: what every test against the standalone binary does first. A crash test's server comes
 * back on another port, so `base` may be read again at each call.
 */
export const signIn = async (base: string | (() => string), subject: string) => {
  const origin = typeof base === "string" ? () => base : base
  const login = await fetch(`${origin()}/v1/auth/dev/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ subject })
  })
  if (login.status !== 200) throw new Error(`dev login answered ${login.status}: ${await login.text()}`)
  const { token } = (await login.json()) as { token: string }
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const call = async (method: string, path: string, body?: unknown): Promise<Reply> => {
    const reply = await fetch(`${origin()}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await reply.text()
    return { status: reply.status, body: text === "" ? undefined : JSON.parse(text) }
  }
  return { token, headers, call }
}
