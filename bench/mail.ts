// `npm run bench:mail -- [--messages <n>] [--concurrency <n>] [--runs <n>] [--timeout <s>] [--save]`
//
// The node mail relay's throughput (decisions.md part 6): small messages sent through `POST /v1/node/mail/send` of the
// real hostplane server (embedded PostgreSQL, the `.eml` outbox as its transport) beside writing the same bytes as
// files into a folder on the same disk the way the outbox does (a temporary file, written, flushed, renamed), at the
// same concurrency, in the same run. Each relayed message does everything a real one does: node token, message shape,
// project, grant, From, the hourly cap slot under the address row's lock, the outbox write and the `out` log row
// with the raw message. Prints messages/s of both and the ratio. Runs directly on Node 22 type stripping.
import { startFakePolar } from "@hostplane/testkit"
import { randomUUID } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Path from "node:path"
import {
  hasProc,
  log,
  makeTempDir,
  parseOptions,
  round,
  rssKiB,
  runBench,
  samplePeak,
  startHostplane
} from "./support/harness.ts"
import { alignColumns, formatRatio, gitCommit, loadLine, machine, spread, writeReport } from "./support/report.ts"

const usage = `usage: npm run bench:mail -- [options]
  --messages <n>     messages per run through each path (default 1000; at most 1000, the pro plan's hourly cap)
  --concurrency <n>  messages in flight at once on each path (default 10)
  --runs <n>         paired runs, each relaying into a fresh project (default 3)
  --timeout <s>      abort after this many seconds (default 600)
  --save             write the JSON result to bench/results/`

const { values, fail } = parseOptions(usage, {
  messages: { type: "string" },
  concurrency: { type: "string" },
  runs: { type: "string" },
  timeout: { type: "string" },
  save: { type: "boolean", default: false }
})
const count = (raw: string | undefined, fallback: number, max: number, name: string) => {
  const n = raw === undefined ? fallback : Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > max) fail(`invalid --${name} ${JSON.stringify(raw)}`)
  return n
}
// The hourly cap counts per project, warm-up included: each run relays into a fresh project, so 1,000 fit exactly.
const messages = count(values.messages, 1000, 1000, "messages")
const concurrency = count(values.concurrency, 10, 100, "concurrency")
const runs = count(values.runs, 3, 20, "runs")
const timeoutS = count(values.timeout, 600, 3600, "timeout")

const mailDomain = "mail.bench.localhost"
const nodeToken = "bench-node-token"
const warmupMessages = 100

const agent = new Http.Agent({ keepAlive: true, maxSockets: concurrency })

/** One request on a kept-alive connection; answers the status and the body. */
const send = (url: string, headers: Record<string, string>, body: string | Uint8Array) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const length = typeof body === "string" ? Buffer.byteLength(body) : body.length
    const req = Http.request(
      url,
      { method: "POST", agent, headers: { ...headers, "content-length": String(length) } },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("error", reject)
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }))
      }
    )
    req.on("error", reject)
    req.end(body)
  })

const json = (reply: { status: number; body: string }, what: string) => {
  if (reply.status < 200 || reply.status >= 300) throw new Error(`${what} answered ${reply.status}: ${reply.body}`)
  return reply.body === "" ? undefined : JSON.parse(reply.body)
}

/** `count` small messages (about 400 bytes) from `address`, each with its own Message-ID, as a node's worker sends them. */
const messagesFrom = (address: string, count: number, tag: string) =>
  Array.from({ length: count }, (_, i) => {
    const text = [
      `From: Bench <${address}>`,
      `To: Reader ${i} <reader${i}@example.com>`,
      `Subject: Bench message ${i} of ${tag}`,
      `Message-ID: <${tag}.${i}.${randomUUID()}@bench.example>`,
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "",
      `Hello reader ${i},`,
      "",
      "this is one of the small messages the mail relay benchmark sends through the node relay and writes directly.",
      ""
    ].join("\r\n")
    return new TextEncoder().encode(text)
  })

/** Runs `task` over `0..count-1` with `concurrency` in flight; answers the wall time in seconds. */
const timed = async (count: number, task: (index: number) => Promise<void>) => {
  let next = 0
  const started = process.hrtime.bigint()
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await task(next++)
    })
  )
  return Number(process.hrtime.bigint() - started) / 1e9
}

/** What the outbox transport does for each message: a temporary file, written, flushed, closed, renamed over `name`. */
const writeAtomically = async (dir: string, name: string, data: Uint8Array) => {
  const temp = Path.join(dir, `.${name}.${randomUUID()}.tmp`)
  const file = await Fs.promises.open(temp, "wx", 0o600)
  try {
    await file.writeFile(data)
    await file.sync()
  } finally {
    await file.close()
  }
  await Fs.promises.rename(temp, Path.join(dir, name))
}

interface RunResult {
  readonly run: number
  readonly bytes: number
  readonly relaySeconds: number
  readonly directSeconds: number
  readonly relayPerSecond: number
  readonly directPerSecond: number
  readonly ratio: number
  readonly loadAverage: string
}

const emlCount = async (dir: string) =>
  (await Fs.promises.readdir(dir).catch(() => [] as Array<string>)).filter((name) => name.endsWith(".eml")).length

const main = async () => {
  const dir = await makeTempDir("hostplane-bench-mail-")
  const polar = await startFakePolar()
  const server = await startHostplane(dir, {
    SERVICE_MAIL_DOMAIN: mailDomain,
    SERVICE_NODE_TOKEN: nodeToken,
    SERVICE_BILLING_WEBHOOK_SECRET: polar.webhookSecret,
    SERVICE_SMTP_URL: "" // the .eml outbox, whatever the environment says
  })
  const outbox = Path.join(dir, "hostplane", "outbox")
  const session = { authorization: `Bearer ${server.token}`, "content-type": "application/json" }
  const org = json(await send(`${server.base}/v1/orgs`, session, JSON.stringify({ name: "Mail bench" })), "org create")
  const slug = org.slug as string
  // Pro (1,000 messages an hour per project; free allows 50) through the signed webhook, as Polar sends it.
  const plan = await polar.deliver(`${server.base}/v1/hooks/billing`, {
    type: "subscription.active",
    data: { id: "sub_bench", status: "active", metadata: { orgSlug: slug } }
  })
  if (plan.status !== 200 || plan.body?.applied !== true) {
    throw new Error(`the pro plan was not applied: ${plan.status} ${JSON.stringify(plan.body)}`)
  }

  /** A fresh project with email granted; answers its id and address. */
  const grantedProject = async (name: string) => {
    const project = json(
      await send(`${server.base}/v1/orgs/${slug}/projects`, session, JSON.stringify({ name })),
      "project create"
    )
    const status = json(
      await send(`${server.base}/v1/orgs/${slug}/projects/${name}/email`, { authorization: session.authorization }, ""),
      "email grant"
    )
    if (status.hourlyCap < messages) throw new Error(`the hourly cap is ${status.hourlyCap}: the org is not pro`)
    return { id: project.id as string, address: status.address as string }
  }

  const relayHeaders = (projectId: string) => ({
    authorization: `Bearer ${nodeToken}`,
    "content-type": "message/rfc822",
    "x-project-id": projectId
  })
  const relayAll = (projectId: string, batch: ReadonlyArray<Uint8Array>) => {
    const headers = relayHeaders(projectId)
    return timed(batch.length, async (i) => {
      const reply = await send(`${server.base}/v1/node/mail/send`, headers, batch[i]!)
      if (reply.status !== 202) throw new Error(`relay of message ${i} answered ${reply.status}: ${reply.body}`)
    })
  }

  const warmup = await grantedProject("mail-warmup")
  log(`warm-up: ${warmupMessages} messages through the relay`)
  await relayAll(warmup.id, messagesFrom(warmup.address, warmupMessages, "warmup"))

  const rss = samplePeak(() => rssKiB(server.child.pid), hasProc ? 100 : 500)
  const results: Array<RunResult> = []
  for (let run = 1; run <= runs; run++) {
    const project = await grantedProject(`mail-${run}`)
    const batch = messagesFrom(project.address, messages, `run${run}`)
    const bytes = batch.reduce((sum, message) => sum + message.length, 0)
    const direct = Path.join(dir, `direct-${run}`)
    await Fs.promises.mkdir(direct, { recursive: true, mode: 0o700 })
    // Alternate which goes first, so neither always meets a disk still busy with the other's writes.
    const measureDirect = () => timed(batch.length, (i) => writeAtomically(direct, `direct-${run}-${i}.eml`, batch[i]!))
    const before = await emlCount(outbox)
    let relaySeconds: number
    let directSeconds: number
    if (run % 2 === 1) {
      relaySeconds = await relayAll(project.id, batch)
      directSeconds = await measureDirect()
    } else {
      directSeconds = await measureDirect()
      relaySeconds = await relayAll(project.id, batch)
    }
    const relayed = (await emlCount(outbox)) - before
    const written = await emlCount(direct)
    if (relayed !== messages || written !== messages) {
      throw new Error(`expected ${messages} files on each side, found ${relayed} in the outbox and ${written} written`)
    }
    const result: RunResult = {
      run,
      bytes,
      relaySeconds: round(relaySeconds, 3),
      directSeconds: round(directSeconds, 3),
      relayPerSecond: round(messages / relaySeconds, 1),
      directPerSecond: round(messages / directSeconds, 1),
      ratio: round(directSeconds / relaySeconds, 4),
      loadAverage: loadLine()
    }
    results.push(result)
    log(
      `run ${run}: relay ${result.relayPerSecond} msg/s (${result.relaySeconds} s), direct ${result.directPerSecond} msg/s (${result.directSeconds} s), relay/direct ${result.ratio.toFixed(3)}x; ${result.loadAverage}`
    )
    await Fs.promises.rm(direct, { recursive: true, force: true })
  }
  const peak = rss.stop().peak
  const median = (pick: (r: RunResult) => number) => spread(results.map(pick)).median
  const table = alignColumns([
    ["path", "msg/s", "seconds"],
    [
      "relay",
      String(
        round(
          median((r) => r.relayPerSecond),
          1
        )
      ),
      String(
        round(
          median((r) => r.relaySeconds),
          3
        )
      )
    ],
    [
      "direct",
      String(
        round(
          median((r) => r.directPerSecond),
          1
        )
      ),
      String(
        round(
          median((r) => r.directSeconds),
          3
        )
      )
    ]
  ])
  console.log(
    `\nMail relay: ${messages} messages of about ${Math.round(results[0]!.bytes / messages)} bytes per run, ${concurrency} in flight; medians of ${runs} paired runs`
  )
  console.log(table.join("\n"))
  console.log("-".repeat(table[0]!.length))
  console.log(`relay/direct msg/s  ${formatRatio(results.map((r) => r.ratio))}`)
  console.log(
    `server peak RSS ${peak === undefined ? "n/a" : `${round(peak / 1024, 1)} MiB`} (runs only); ${loadLine()}`
  )
  await writeReport(
    "mail",
    {
      date: new Date().toISOString(),
      commit: gitCommit(),
      machine: machine(),
      messages,
      concurrency,
      runs,
      serverPeakRssMiB: peak === undefined ? null : round(peak / 1024, 1),
      results
    } as { date: string },
    values.save === true
  )
  agent.destroy()
  await polar.close()
}

await runBench(main, timeoutS, () => agent.destroy())
