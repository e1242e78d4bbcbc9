import { assert, layer } from "@effect/vitest"
import { MailOutboxPg } from "@hostplane/adapters-pg"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { MailOutbox } from "@hostplane/core/mail/Mail"
import { Effect, Layer, Option, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import * as Readline from "node:readline"

const childScript = Path.join(import.meta.dirname, "support", "mailRunnerChild.ts")

interface Runner {
  readonly process: ChildProcess
  /** Every stdout line so far. */
  readonly lines: Array<string>
  readonly ready: Promise<void>
  readonly exited: Promise<number | null>
}

/** A `mailRunnerChild.ts` process on `databaseUrl`, killed when the scope closes. */
const startRunner = (databaseUrl: string) =>
  Effect.acquireRelease(
    Effect.sync((): Runner => {
      const child = spawn(process.execPath, ["--conditions=@hostplane/source", childScript], {
        env: { ...process.env, DATABASE_URL: databaseUrl },
        stdio: ["pipe", "pipe", "inherit"]
      })
      const lines: Array<string> = []
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
      const ready = new Promise<void>((resolve, reject) => {
        Readline.createInterface({ input: child.stdout! }).on("line", (line) => {
          lines.push(line)
          if (line === "ready") resolve()
        })
        exited.then((code) => reject(new Error(`runner exited with ${code} before it was ready`)))
      })
      return { process: child, lines, ready, exited }
    }),
    (runner) => Effect.sync(() => runner.process.kill())
  )

layer(MailOutboxPg.layer.pipe(Layer.provideMerge(TestDatabase.layer)), { excludeTestServices: true })(
  "MailOutboxPg claimed from two OS processes",
  (it) => {
    it.effect("two runner processes sharing one outbox send every message exactly once", () =>
      Effect.gen(function* () {
        const outbox = yield* MailOutbox
        const { url } = yield* TestDatabase
        const createdAt = new Date(Date.now() - 1_000).toISOString()
        const ids = Array.from({ length: 200 }, (_, i) => `mail_${String(i).padStart(2, "0")}_${crypto.randomUUID()}`)
        yield* Effect.forEach(ids, (id) =>
          outbox.enqueue(
            { id, from: "hostplane <no-reply@example.test>", to: `${id}@example.test`, subject: id, text: "x" },
            createdAt
          )
        )

        const runners = [yield* startRunner(Redacted.value(url)), yield* startRunner(Redacted.value(url))]
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
          assert.strictEqual(row.attempts, 1)
        }
      })
    )
  }
)
