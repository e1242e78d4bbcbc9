// `npm run bench:replicas -- [--duration <s>] [--connections <n>] [--warmup <s>] [--runs <n>] [--takeovers <n>] [--timeout <s>] [--save]`
//
// Two hostplane replicas on one PostgreSQL (decisions.md part 15). Loads `GET /v1/me` on one replica, then the same
// number of connections split over both, in paired runs side by side, and prints the ratio of two to one; then kills
// the replica holding a mail job mid-send (SIGKILL) and times how long the other takes to send it. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import autocannon from "autocannon"
import { randomBytes } from "node:crypto"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  type Child,
  freePort,
  log,
  makeTempDir,
  parseOptions,
  repoRoot,
  request,
  round,
  runBench,
  sleep,
  startChild,
  startHostplane,
  waitFor
} from "./support/harness.ts"
import { embeddedDatabaseUrl, loadOptions, loadOptionsConfig, stopLoad } from "./support/load.ts"
import { gitCommit, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:replicas -- [options]
  --duration <s>      measured load per setup, seconds (default 10)
  --connections <n>   concurrent keep-alive connections in all (default 50; split over the replicas)
  --warmup <s>        unmeasured load before each measurement, seconds (default 3, 0 to skip)
  --runs <n>          paired runs, each loading one replica then two (default 3)
  --takeovers <n>     replicas killed mid-job, each timed (default 3)
  --timeout <s>       abort everything after this many seconds
  --save              write the JSON result to bench/results/ instead of the system temp dir`

const { values: parsed, fail } = parseOptions(usage, { ...loadOptionsConfig, takeovers: { type: "string" } } as const)
const { durationS, connections, warmupS, runs } = loadOptions(parsed, fail)
const takeovers = parsed.takeovers === undefined ? 3 : Number(parsed.takeovers)
if (!Number.isInteger(takeovers) || takeovers < 0 || takeovers > 20) fail(`invalid --takeovers ${parsed.takeovers}`)
const timeoutS =
  parsed.timeout === undefined ? 300 + 2 * runs * (warmupS + durationS) + 120 * takeovers : Number(parsed.timeout)
const save = parsed.save === true
const serverEntry = Path.join(repoRoot, "packages/server/src/bin/server.ts")

// ---------------------------------------------------------------------------------------------------------------
// A minimal SMTP server per replica: it either answers (and records the recipients) or, while `holding`, greets
// nobody, so the replica's send waits there until it is killed.

interface Smtp {
  readonly url: string
  holding: boolean
  readonly connected: Array<number>
  readonly delivered: Array<{ readonly at: number; readonly to: ReadonlyArray<string> }>
}

const startSmtp = async (): Promise<Smtp> => {
  const port = await freePort()
  const smtp: Smtp = { url: `smtp://127.0.0.1:${port}`, holding: false, connected: [], delivered: [] }
  const server = Net.createServer((socket) => {
    socket.on("error", () => socket.destroy())
    smtp.connected.push(performance.now())
    if (smtp.holding) return
    socket.write("220 bench ESMTP\r\n")
    let buffered = ""
    let inData = false
    let to: Array<string> = []
    socket.on("data", (chunk) => {
      buffered += chunk.toString("latin1")
      for (;;) {
        if (inData) {
          const end = buffered.indexOf("\r\n.\r\n")
          if (end < 0) return
          buffered = buffered.slice(end + 5)
          inData = false
          smtp.delivered.push({ at: performance.now(), to })
          to = []
          socket.write("250 OK queued\r\n")
          continue
        }
        const eol = buffered.indexOf("\r\n")
        if (eol < 0) return
        const line = buffered.slice(0, eol)
        buffered = buffered.slice(eol + 2)
        const verb = line.slice(0, 4).toUpperCase()
        if (verb === "EHLO" || verb === "HELO") socket.write("250 bench\r\n")
        else if (verb === "RCPT") {
          to.push(/<([^>]*)>/.exec(line)?.[1] ?? "")
          socket.write("250 OK\r\n")
        } else if (verb === "DATA") {
          inData = true
          socket.write("354 go ahead\r\n")
        } else if (verb === "QUIT") socket.end("221 bye\r\n")
        else socket.write("250 OK\r\n")
      }
    })
  })
  server.unref()
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return smtp
}

// ---------------------------------------------------------------------------------------------------------------
// Replicas

interface Replica {
  readonly name: string
  child: Child
  base: string
  readonly smtp: Smtp
}

const startReplica = async (
  dir: string,
  name: string,
  databaseUrl: string,
  sealKey: string,
  smtp: Smtp
): Promise<{ child: Child; base: string }> => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    SERVICE_ENABLE_DEV_AUTH: "true",
    SERVICE_SEAL_KEY: sealKey,
    SERVICE_GIT_DIR: Path.join(dir, "git"),
    SERVICE_DATA_DIR: Path.join(dir, `${name}-${Date.now()}`),
    SERVICE_LISTEN: `127.0.0.1:${port}`,
    SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
    SERVICE_GIT_SSH_LISTEN: `127.0.0.1:${await freePort()}`,
    SERVICE_DNS_LISTEN: "off",
    SERVICE_WORKERS: "off",
    SERVICE_SMTP_URL: smtp.url
  }
  log(`${name}: starting on ${base}, DATABASE_URL of the first replica's PostgreSQL`)
  const child = startChild(name, ["--conditions=@hostplane/source", serverEntry], env, Path.join(dir, `${name}.log`))
  await waitFor(child, 180_000, async () =>
    (await request("GET", `${base}/readyz`, {})).status === 200 ? true : undefined
  )
  return { child, base }
}

// ---------------------------------------------------------------------------------------------------------------
// Load

interface AutocannonResult {
  readonly requests: { readonly average: number; readonly total: number }
  readonly non2xx: number
  readonly errors: number
}
type Autocannon = (
  options: Record<string, unknown>,
  done: (error: unknown, result: AutocannonResult) => void
) => {
  stop: () => void
}

const load = (url: string, headers: Record<string, string>, connections_: number, seconds: number) =>
  new Promise<AutocannonResult>((resolve, reject) => {
    ;(autocannon as unknown as Autocannon)(
      { url, headers, connections: connections_, duration: seconds, pipelining: 1, timeout: 10 },
      (error, result) => (error !== null && error !== undefined ? reject(error) : resolve(result))
    )
  })

/** `connections` split evenly over `bases`, all loaded at once; requests/s summed. */
const loadAll = async (bases: ReadonlyArray<string>, headers: Record<string, string>, seconds: number) => {
  const results = await Promise.all(
    bases.map((base, i) =>
      load(
        `${base}/v1/me`,
        headers,
        Math.floor(connections / bases.length) + (i < connections % bases.length ? 1 : 0),
        seconds
      )
    )
  )
  return {
    requestsPerSecond: round(
      results.reduce((sum, result) => sum + result.requests.average, 0),
      1
    ),
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
    errors: results.reduce((sum, result) => sum + result.errors, 0)
  }
}

const loadAtStart = Os.loadavg().map((value) => round(value, 2))

const main = async () => {
  log(`load average at start: ${loadAtStart.join(" ")} on ${Os.cpus().length} CPUs`)
  const dir = await makeTempDir("hostplane-bench-replicas-")
  const sealKey = randomBytes(32).toString("base64")
  const smtps = [await startSmtp(), await startSmtp()]

  // The first replica owns the embedded PostgreSQL; the second joins it by DATABASE_URL.
  const first = await startHostplane(dir, {
    SERVICE_SEAL_KEY: sealKey,
    SERVICE_GIT_DIR: Path.join(dir, "git"),
    SERVICE_DNS_LISTEN: "off",
    SERVICE_WORKERS: "off",
    SERVICE_SMTP_URL: smtps[0]!.url
  })
  const databaseUrl = embeddedDatabaseUrl(Path.join(dir, "hostplane"))
  const second = await startReplica(dir, "replica-b", databaseUrl, sealKey, smtps[1]!)
  const replicas: Array<Replica> = [
    { name: "replica-a", child: first.child, base: first.base, smtp: smtps[0]! },
    { name: "replica-b", child: second.child, base: second.base, smtp: smtps[1]! }
  ]
  const headers = { authorization: `Bearer ${first.token}` }
  for (const replica of replicas) {
    const me = await request("GET", `${replica.base}/v1/me`, headers)
    if (me.status !== 200) throw new Error(`${replica.name}: GET /v1/me answered ${me.status}`)
  }

  // 1. Throughput: one replica, then both, the same connections in all.
  const paired: Array<{ one: number; two: number; ratio: number }> = []
  for (let run = 1; run <= runs; run++) {
    if (warmupS > 0) {
      await loadAll([replicas[0]!.base], headers, warmupS)
    }
    const one = await loadAll([replicas[0]!.base], headers, durationS)
    if (warmupS > 0)
      await loadAll(
        replicas.map((replica) => replica.base),
        headers,
        warmupS
      )
    const two = await loadAll(
      replicas.map((replica) => replica.base),
      headers,
      durationS
    )
    if (one.non2xx + one.errors + two.non2xx + two.errors > 0) {
      throw new Error(`errors under load: one ${JSON.stringify(one)}, two ${JSON.stringify(two)}`)
    }
    const ratio = round(two.requestsPerSecond / one.requestsPerSecond, 3)
    paired.push({ one: one.requestsPerSecond, two: two.requestsPerSecond, ratio })
    log(
      `run ${run}: one replica ${one.requestsPerSecond} req/s, two replicas ${two.requestsPerSecond} req/s: × ${ratio}`
    )
  }

  // 2. Takeover: the replica whose SMTP server holds the mail job is killed; the other sends it.
  const signIn = await request(
    "POST",
    `${replicas[0]!.base}/v1/auth/dev/login`,
    { "content-type": "application/json" },
    JSON.stringify({ subject: "bench-mailer" })
  )
  const mailer = { authorization: `Bearer ${(JSON.parse(signIn.body.toString("utf8")) as { token: string }).token}` }
  const slug = `bench-mail-${Date.now()}`
  const created = await request(
    "POST",
    `${replicas[0]!.base}/v1/orgs`,
    { ...mailer, "content-type": "application/json" },
    JSON.stringify({ name: "Bench mail", slug })
  )
  if (created.status !== 201) throw new Error(`org create answered ${created.status}`)
  const takeoverMs: Array<number> = []
  for (let round_ = 1; round_ <= takeovers; round_++) {
    const survivorBase = () => replicas.find((replica) => !replica.child.exited)!.base
    for (const replica of replicas) {
      replica.smtp.holding = true
      replica.smtp.connected.length = 0
    }
    const email = `takeover-${round_}-${Date.now()}@example.com`
    const invited = await request(
      "POST",
      `${survivorBase()}/v1/orgs/${slug}/invites`,
      { ...mailer, "content-type": "application/json" },
      JSON.stringify({ email, role: "member" })
    )
    if (invited.status !== 201) throw new Error(`invite answered ${invited.status}: ${invited.body.toString("utf8")}`)
    const deadline = Date.now() + 60_000
    while (replicas.every((replica) => replica.smtp.connected.length === 0)) {
      if (Date.now() > deadline) throw new Error("no replica started the mail job within 60 s")
      await sleep(20)
    }
    const victim = replicas.find((replica) => replica.smtp.connected.length > 0)!
    const survivor = replicas.find((replica) => replica !== victim)!
    survivor.smtp.holding = false
    // Only the node process: the first replica's PostgreSQL (its child) keeps serving the survivor.
    victim.child.stopping = true
    const killedAt = performance.now()
    process.kill(victim.child.pid, "SIGKILL")
    while (!survivor.smtp.delivered.some((delivery) => delivery.to.includes(email))) {
      if (performance.now() - killedAt > 90_000) throw new Error("the survivor did not send within 90 s")
      await sleep(10)
    }
    const waited = Math.round(performance.now() - killedAt)
    takeoverMs.push(waited)
    log(`takeover ${round_}: ${victim.name} killed mid-send; ${survivor.name} sent it ${waited} ms later`)
    if (round_ < takeovers) {
      const restarted = await startReplica(dir, victim.name, databaseUrl, sealKey, victim.smtp)
      victim.child = restarted.child
      victim.base = restarted.base
      victim.smtp.holding = false
    }
  }

  const ratios = paired.map((run) => run.ratio)
  console.log("")
  console.log(`GET /v1/me, ${connections} connections in all, ${durationS} s per setup, ${runs} paired runs`)
  for (const [i, run] of paired.entries()) {
    console.log(`  run ${i + 1}: one replica ${run.one} req/s   two replicas ${run.two} req/s   ratio ${run.ratio}`)
  }
  const ratio = spread(ratios)
  console.log(`  two replicas ÷ one: median ${round(ratio.median, 2)} (min ${ratio.min}, max ${ratio.max})`)
  if (takeoverMs.length > 0) {
    const waits = spread(takeoverMs)
    console.log(`takeover after SIGKILL mid-job: ${takeoverMs.join(", ")} ms (median ${round(waits.median, 0)} ms)`)
  }
  console.log(
    `  machine: ${Os.cpus().length} CPUs, load average ${loadAtStart.join(" ")} at start; on one machine both replicas ` +
      `and the load generator share its cores, so the ratio shows what a second replica adds here, not on separate hosts`
  )
  const report = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: machine(),
    loadAtStart,
    options: { durationS, connections, warmupS, runs, takeovers },
    paired,
    ratio: spread(ratios),
    takeoverMs
  }
  await writeReport("replicas", report, save)
}

await runBench(main, timeoutS, stopLoad)
