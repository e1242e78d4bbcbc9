/**
 * One mail runner process for `MailOutboxProcesses.test.ts`: connects to `DATABASE_URL`, prints `ready`, waits for
 * `go` on stdin, then drains the outbox with the core `MailRunner` from several fibers at once (more claims racing
 * the other process). Its transport sends nothing and prints `sent <id>` for every message it is handed.
 */
import { MailOutboxPg, PgDatabase } from "@hostplane/adapters-pg"
import { MailTransport } from "@hostplane/core/mail/Mail"
import { MailRunner } from "@hostplane/core/mail/MailRunner"
import { Config, Duration, Effect, Layer } from "effect"
import * as Readline from "node:readline"

const fibers = 4

const countingTransport = Layer.succeed(MailTransport, {
  send: (message) => Effect.sync(() => process.stdout.write(`sent ${message.id}\n`)).pipe(Effect.delay("5 millis"))
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

const program = Effect.gen(function* () {
  const runner = yield* MailRunner
  process.stdout.write("ready\n")
  yield* awaitGo
  const drain = runner.runOnce.pipe(Effect.repeat({ while: (handled) => handled > 0 }))
  yield* Effect.all(
    Array.from({ length: fibers }, () => drain),
    { concurrency: "unbounded", discard: true }
  )
})

const database = Layer.unwrap(
  Effect.gen(function* () {
    return PgDatabase.layer(yield* Config.Redacted("DATABASE_URL"))
  })
)

Effect.runPromise(
  program.pipe(
    Effect.provide(
      MailRunner.make({ interval: Duration.seconds(1), lease: Duration.minutes(1), batch: 2, maxAttempts: 8 }).pipe(
        Layer.provide(Layer.mergeAll(MailOutboxPg.layer, countingTransport)),
        Layer.provide(database)
      )
    )
  )
).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
