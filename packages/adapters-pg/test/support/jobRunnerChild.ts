/**
 * One job runner process for `JobRunnerProcesses.test.ts`, on `DATABASE_URL`. `mail`: prints `ready`, waits for `go`
 * on stdin, then drains the mail jobs from several fibers at once (more claims racing the other process) with a
 * transport that sends nothing and prints `sent <id>`. `slow`: runs the `test_slow` kind in the background until it
 * is killed, printing `start <id> <phase> <ms>` and `end <id> <phase> <ms>` around every phase (each phase sleeps the
 * payload's `ms`); `LEASE_MS` sets the lease.
 */
import { JobStorePg, MailOutboxPg, PgDatabase, PgSession } from "@hostplane/adapters-pg"
import { handler } from "@hostplane/core/jobs/Job"
import { JobHandlers, JobRunner } from "@hostplane/core/jobs/JobRunner"
import { MailTransport } from "@hostplane/core/mail/Mail"
import { sendMailHandler } from "@hostplane/core/mail/SendMail"
import { Config, Duration, Effect, Layer } from "effect"
import * as Readline from "node:readline"
import { slowJob } from "./slowJob.ts"

const print = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))

const slowHandler = Effect.succeed(
  handler(slowJob, {
    run: (phase, job) =>
      Effect.gen(function* () {
        yield* print(`start ${job.id} ${phase} ${Date.now()}`)
        yield* Effect.sleep(Duration.millis(job.payload.ms))
        yield* print(`end ${job.id} ${phase} ${Date.now()}`)
      })
  })
)

const countingTransport = Layer.succeed(MailTransport, {
  send: (message) => print(`sent ${message.id}`).pipe(Effect.delay("5 millis")),
  sendRaw: (message) => Effect.succeed(message.id)
})

const awaitGo = Effect.callback<void>((resume) => {
  const lines = Readline.createInterface({ input: process.stdin })
  lines.on("line", (line) => {
    if (line.trim() === "go") {
      lines.close()
      resume(Effect.void)
    }
  })
})

const database = Layer.unwrap(Effect.map(Config.Redacted("DATABASE_URL"), (url) => PgDatabase.layer(url)))
const stores = Layer.mergeAll(MailOutboxPg.layer, JobStorePg.layer).pipe(
  Layer.provide(PgSession.layer),
  Layer.provideMerge(database)
)

const mail = Effect.gen(function* () {
  const runner = yield* JobRunner
  yield* print("ready")
  yield* awaitGo
  const drain = runner.runOnce(2).pipe(Effect.repeat({ while: (claimed) => claimed > 0 }))
  yield* Effect.all(
    Array.from({ length: 4 }, () => drain),
    { concurrency: "unbounded", discard: true }
  )
}).pipe(
  Effect.provide(
    JobRunner.make().pipe(
      Layer.provide(JobHandlers.layer([sendMailHandler()])),
      Layer.provide(countingTransport),
      Layer.provide(stores)
    )
  )
)

const slow = Effect.gen(function* () {
  const lease = Duration.millis(Number(process.env.LEASE_MS ?? "20000"))
  yield* Layer.launch(
    Layer.merge(
      JobRunner.background({
        lease,
        heartbeat: Duration.divideUnsafe(lease, 4),
        interval: Duration.millis(100),
        concurrency: 2
      }),
      Layer.effectDiscard(print("ready"))
    ).pipe(Layer.provide(JobHandlers.layer([slowHandler])), Layer.provide(stores))
  )
})

Effect.runPromise(process.argv[2] === "slow" ? slow : mail).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
