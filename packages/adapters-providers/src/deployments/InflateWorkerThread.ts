// The bundle reader's worker thread (`InflateWorker.ts` starts it): each upload it is handed runs the reader's one
// pass (`BundlePass.ts`, the same checks and refusals as in the process) with the disk store's `put` into the
// process's store folder, over the body bytes the main thread sends, and answers what it stored and found.
import { parentPort } from "node:worker_threads"
import { Cause, Effect, Exit, Fiber, Queue, Stream } from "effect"
import * as ArtifactStoreDisk from "./ArtifactStoreDisk.ts"
import { pass } from "./BundlePass.ts"
import type { FromThread, Job, ToThread } from "./InflateWorker.ts"

const writers = new Map<string, ReturnType<typeof ArtifactStoreDisk.writer>>()

const writerOf = (folder: string) => {
  const known = writers.get(folder)
  if (known !== undefined) return known
  const made = ArtifactStoreDisk.writer(folder)
  writers.set(folder, made)
  return made
}

const answer = (exit: Exit.Exit<FromThread>): FromThread => {
  if (Exit.isSuccess(exit)) return exit.value
  if (Cause.hasInterruptsOnly(exit.cause)) return { aborted: true }
  return { defect: Cause.pretty(exit.cause) }
}

const run = ({ port, folder, limits }: Job) => {
  const fiber: Fiber.Fiber<FromThread> = Effect.runFork(
    Effect.gen(function* () {
      const body = yield* Queue.unbounded<Uint8Array, Cause.Done>()
      port.on("message", (message: ToThread) => {
        if (message === "end") Queue.endUnsafe(body)
        else if (message === "abort") fiber.interruptUnsafe()
        else Queue.offerUnsafe(body, new Uint8Array(message))
      })
      // The main thread's credit: a batch the pass took off the queue, so it may send one more.
      const taken = Stream.fromQueue(body).pipe(
        Stream.tap(() => Effect.sync(() => port.postMessage({ credit: 1 } satisfies FromThread)))
      )
      return yield* pass(writerOf(folder).put, limits, taken).pipe(
        Effect.map((passed): FromThread => ({ passed })),
        // The disk store never answers that its objects are unavailable: that would be a defect.
        Effect.catchTag("ArtifactStoreUnavailable", Effect.die),
        Effect.catch((refused) =>
          Effect.succeed<FromThread>({
            refused: {
              _tag: refused._tag,
              message: refused.message,
              ...(refused.details === undefined ? {} : { details: refused.details })
            }
          })
        )
      )
    })
  )
  fiber.addObserver((exit) => {
    port.postMessage(answer(exit))
    port.close()
  })
}

parentPort?.on("message", run)
