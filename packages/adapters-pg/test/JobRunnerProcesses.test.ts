import { assert, layer } from "@effect/vitest"
import { JobStorePg, MailOutboxPg, PgSession } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Jobs } from "@hostplane/core/jobs/Jobs"
import { JobStore } from "@hostplane/core/jobs/JobStore"
import { MailOutbox } from "@hostplane/core/mail/Mail"
import { mailQueue } from "@hostplane/core/mail/SendMail"
import { Tokens } from "@hostplane/core/kernel/Tokens"
import { Effect, Layer, Option, Redacted } from "effect"
import { build, stop } from "esbuild"
import { buildOptions, root } from "../../server/scripts/bundle.mjs"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import * as Readline from "node:readline"
import { afterAll, beforeAll } from "vitest"
import { slowJob } from "./support/slowJob.ts"

/**
 * `support/jobRunnerChild.ts` as one ES module, built once for the file with `npm start`'s bundle options: hostplane's
 * sources and Effect inside, every other package loaded from the repository's `node_modules`, inside which it is
 * written. A runner then starts by loading one module instead of stripping the types of and linking
 * hundreds (about 0.5 CPU-s a start instead of 2.3), and this file starts six.
 */
let childScript = ""
beforeAll(async () => {
  const cache = Path.join(root, "node_modules", ".cache")
  await Fs.mkdir(cache, { recursive: true })
  const folder = await Fs.mkdtemp(Path.join(cache, "hostplane-job-runner-"))
  childScript = Path.join(folder, "jobRunnerChild.mjs")
  await build({
    ...buildOptions,
    entryPoints: [Path.join(import.meta.dirname, "support", "jobRunnerChild.ts")],
    outfile: childScript
  }).finally(stop)
}, 120_000)
afterAll(() => (childScript === "" ? undefined : Fs.rm(Path.dirname(childScript), { recursive: true, force: true })))

interface Runner {
  readonly process: ChildProcess
  /** Every stdout line so far. */
  readonly lines: Array<string>
  readonly ready: Promise<void>
  readonly exited: Promise<number | null>
  /** Resolves once a line satisfies `test`. */
  readonly waitFor: (test: (line: string) => boolean) => Promise<string>
}

/** A `jobRunnerChild.ts` process on `databaseUrl` in `mode`, killed when the scope closes. */
const startRunner = (databaseUrl: string, mode: "mail" | "slow", env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.sync((): Runner => {
      const child = spawn(process.execPath, [childScript, mode], {
        env: { ...process.env, ...env, DATABASE_URL: databaseUrl },
        stdio: ["pipe", "pipe", "inherit"]
      })
      const lines: Array<string> = []
      const waiters: Array<{ test: (line: string) => boolean; resolve: (line: string) => void }> = []
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
      Readline.createInterface({ input: child.stdout! }).on("line", (line) => {
        lines.push(line)
        for (const waiter of waiters.filter((w) => w.test(line))) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve(line)
        }
      })
      const waitFor = (test: (line: string) => boolean) => {
        const seen = lines.find(test)
        return seen !== undefined
          ? Promise.resolve(seen)
          : new Promise<string>((resolve, reject) => {
              waiters.push({ test, resolve })
              exited.then((code) => reject(new Error(`runner exited with ${code} while waiting`)))
            })
      }
      const ready = waitFor((line) => line === "ready").then(() => undefined)
      return { process: child, lines, ready, exited, waitFor }
    }),
    (runner) => Effect.sync(() => runner.process.kill("SIGKILL"))
  )

/** `start`/`end` lines of the slow kind: which process ran which phase of which job, and when. */
const phasesOf = (runners: ReadonlyArray<Runner>) =>
  runners.flatMap((runner, process) =>
    runner.lines
      .filter((line) => line.startsWith("start ") || line.startsWith("end "))
      .map((line) => {
        const [event, id, phase, ms] = line.split(" ")
        return { process, event: event!, id: id!, phase: phase!, ms: Number(ms) }
      })
  )

/**
 * The job's row once its runner recorded an end: the last phase's `end` line is printed before the runner's commit,
 * which a loaded machine can hold back well past a fixed wait. Polled every 50 ms for up to 10 s.
 */
const settled = (store: JobStore["Service"], id: string) =>
  Effect.gen(function* () {
    for (let tries = 0; ; tries++) {
      const row = Option.getOrThrow(yield* store.get(id))
      if (row.terminalCode !== null || tries === 200) return row
      yield* Effect.sleep("50 millis")
    }
  })

/** Each test starts two Node processes; on a loaded 2-core machine their start-up alone nears the default 30 s. */
const processStartDeadline = 120_000

const stores = Layer.mergeAll(MailOutboxPg.layer, JobStorePg.layer).pipe(
  Layer.provide(PgSession.layer),
  Layer.provideMerge(TestDatabase.layer)
)

layer(Jobs.layer.pipe(Layer.provideMerge(stores), Layer.provide(Tokens.layer)), { excludeTestServices: true })(
  "the jobs engine on PostgreSQL from several OS processes",
  (it) => {
    it.effect(
      "two runner processes sharing one outbox send every message exactly once",
      () =>
        Effect.gen(function* () {
          const outbox = yield* MailOutbox
          const jobs = yield* JobStore
          const queue = yield* mailQueue
          const { url } = yield* TestDatabase
          const createdAt = new Date(Date.now() - 1_000).toISOString()
          const ids = Array.from({ length: 200 }, (_, i) => `mail_${String(i).padStart(2, "0")}_${crypto.randomUUID()}`)
          yield* Effect.forEach(ids, (id) =>
            queue(
              { id, from: "hostplane <no-reply@example.test>", to: `${id}@example.test`, subject: id, text: "x" },
              createdAt
            )
          )

          const runners = [
            yield* startRunner(Redacted.value(url), "mail"),
            yield* startRunner(Redacted.value(url), "mail")
          ]
          yield* Effect.promise(() => Promise.all(runners.map((runner) => runner.ready)))
          for (const runner of runners) runner.process.stdin!.end("go\n")
          const codes = yield* Effect.promise(() => Promise.all(runners.map((runner) => runner.exited)))
          assert.deepStrictEqual(codes, [0, 0])

          const sentBy = runners.map((runner) =>
            runner.lines.filter((line) => line.startsWith("sent ")).map((line) => line.slice(5))
          )
          const sent = sentBy.flat()
          assert.strictEqual(sent.length, ids.length, "no message is sent twice")
          assert.deepStrictEqual([...sent].sort(), [...ids].sort())
          assert.isTrue(
            sentBy.every((own) => own.length > 0),
            `both processes sent mail: ${sentBy.map((own) => own.length)}`
          )
          for (const id of ids) {
            const row = Option.getOrThrow(yield* outbox.get(id))
            assert.strictEqual(row.state, "sent")
            const job = Option.getOrThrow(yield* jobs.get(id))
            assert.strictEqual(job.attempts, 1)
            assert.strictEqual(job.terminalCode, "done")
          }
        }),
      processStartDeadline
    )

    it.effect(
      "a runner killed mid-phase has its job taken over by another process within seconds, long before its lease ends, without repeating finished phases",
      () =>
        Effect.gen(function* () {
          const jobs = yield* Jobs
          const store = yield* JobStore
          const { url } = yield* TestDatabase
          // A lease of a minute: only the dead process's lost session lock can free the job this fast.
          const env = { LEASE_MS: "60000" }
          const first = yield* startRunner(Redacted.value(url), "slow", env)
          yield* Effect.promise(() => first.ready)
          const id = Option.getOrThrow(yield* jobs.enqueue(slowJob, { ms: 1_500 }))
          yield* Effect.promise(() => first.waitFor((line) => line.startsWith(`start ${id} two`)))
          first.process.kill("SIGKILL")
          yield* Effect.promise(() => first.exited)
          const killedAt = Date.now()

          const second = yield* startRunner(Redacted.value(url), "slow", env)
          yield* Effect.promise(() => second.ready)
          // A loaded machine can take over 10 s to start a process: the takeover is timed from the later of the kill
          // and the second runner's start.
          const readyAt = Date.now()
          const resumed = yield* Effect.promise(() => second.waitFor((line) => line.startsWith(`start ${id} `)))
          assert.strictEqual(
            resumed.split(" ")[2],
            "two",
            "the interrupted phase runs again, the finished one does not"
          )
          const resumedAt = Number(resumed.split(" ")[3])
          assert.isBelow(resumedAt - Math.max(killedAt, readyAt), 10_000, "taken over within seconds")
          assert.isBelow(
            resumedAt - killedAt,
            45_000,
            "before the lease could end (a minute from the last heartbeat, 15 s apart)"
          )
          yield* Effect.promise(() => second.waitFor((line) => line.startsWith(`end ${id} three`)))
          const row = yield* settled(store, id)
          assert.strictEqual(row.terminalCode, "done")
          assert.strictEqual(row.attempts, 2)
          assert.deepStrictEqual(
            phasesOf([first, second])
              .filter((event) => event.id === id && event.event === "end")
              .map((event) => `${event.process}:${event.phase}`),
            ["0:one", "1:two", "1:three"]
          )
        }),
      processStartDeadline
    )

    it.effect(
      "two runner processes never run one job at once, even when phases outlast the lease",
      () =>
        Effect.gen(function* () {
          const jobs = yield* Jobs
          const store = yield* JobStore
          const { url } = yield* TestDatabase
          // Phases of 1.2 s under a lease of 0.6 s: only the heartbeat keeps each job with its runner.
          const env = { LEASE_MS: "600" }
          const runners = [
            yield* startRunner(Redacted.value(url), "slow", env),
            yield* startRunner(Redacted.value(url), "slow", env)
          ]
          yield* Effect.promise(() => Promise.all(runners.map((runner) => runner.ready)))
          const ids = yield* Effect.forEach(Array.from({ length: 6 }), () =>
            Effect.map(jobs.enqueue(slowJob, { ms: 1_200 }), Option.getOrThrow)
          )
          yield* Effect.promise(() =>
            Promise.all(
              ids.map((id) =>
                Promise.race(runners.map((runner) => runner.waitFor((line) => line.startsWith(`end ${id} three`))))
              )
            )
          )
          const events = phasesOf(runners)
          for (const id of ids) {
            const own = events.filter((event) => event.id === id)
            assert.deepStrictEqual(
              own.map((event) => `${event.event} ${event.phase}`),
              ["start one", "end one", "start two", "end two", "start three", "end three"],
              "each phase ran once, one after the other"
            )
            assert.strictEqual(new Set(own.map((event) => event.process)).size, 1, "one process ran the whole job")
          }
          assert.isTrue(new Set(events.map((event) => event.process)).size === 2, "both processes worked")
          for (const id of ids) assert.strictEqual((yield* settled(store, id)).terminalCode, "done")
        }),
      processStartDeadline
    )
  }
)
