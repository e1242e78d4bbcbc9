import { MessageChannel, type MessagePort, Worker } from "node:worker_threads"
import type { BundleLimits } from "@hostplane/core/deployments/Manifest"
import * as Errors from "@hostplane/core/errors/Errors"
import { Deferred, Effect, Exit, Fiber, Stream } from "effect"
import { compressedCount, type Pass, type Refusal } from "./BundlePass.ts"

/** What the main thread sends the thread to start one upload; the upload's messages then go through `port`. */
export interface Job {
  readonly port: MessagePort
  readonly folder: string
  readonly limits: BundleLimits
}

/** The upload's messages to the thread: body bytes (a transferred buffer), their end, or the body failed. */
export type ToThread = ArrayBuffer | "end" | "abort"

/** The thread's messages: bytes it took from the body, then one answer. */
export type FromThread =
  | { readonly credit: number }
  | { readonly passed: Pass }
  | {
      readonly refused: { readonly _tag: Refusal["_tag"]; readonly message: string; readonly details?: Errors.Details }
    }
  | { readonly defect: string }
  | { readonly aborted: true }

type Answer = Exclude<FromThread, { readonly credit: number }>

/**
 * Body batches sent and not yet taken by the thread's reader: the thread reads no faster than zlib, so this bounds
 * what waits for it (as the in-process reader's queue of 16 socket reads does) and how far the body is read past a
 * refusal.
 */
const inFlightBatches = 16

declare global {
  /**
   * The thread's own bundle, beside the binary's bundle that `npm start` runs: its build (`packages/server/scripts/
   * bundle.mjs`) replaces this name with the URL. Anywhere else it is undefined.
   */
  var hostplaneInflateThread: string | undefined
}

/**
 * The thread's module: its bundle under `npm start`, else the module beside this one in the same form, a TypeScript
 * source (a checkout: it then resolves hostplane's packages to their sources too) or the compiled `.js` of an
 * installed package.
 */
const fromSource = import.meta.url.endsWith(".ts")
const bundled = globalThis.hostplaneInflateThread
const threadUrl =
  bundled !== undefined
    ? new URL(bundled)
    : new URL(fromSource ? "./InflateWorkerThread.ts" : "./InflateWorkerThread.js", import.meta.url)
// Only Node's own options: a thread refuses V8's (npm start's collector flags, which apply to every thread anyway).
const options = bundled === undefined && fromSource ? { execArgv: ["--conditions=@hostplane/source"] } : {}

/**
 * How long the thread is kept after its last upload. It costs about 35 MiB of RSS while it lives (its isolate, heap
 * and modules) and 0.3 CPU-s to start: uploads that follow each other keep it, an idle server gives it back.
 */
const idleMillis = 30_000

interface Thread {
  readonly worker: Worker
  /** The uploads it is reading, failed if it dies. */
  readonly pending: Set<(error: Error) => void>
  idle: ReturnType<typeof setTimeout> | undefined
}

let current: Thread | undefined

/** The process's one thread, started by the first upload that needs it (it holds no event loop open). */
const thread = (): Thread => {
  if (current !== undefined) {
    clearTimeout(current.idle)
    current.idle = undefined
    return current
  }
  const worker = new Worker(threadUrl, options)
  worker.unref()
  const started: Thread = { worker, pending: new Set(), idle: undefined }
  const fail = (error: Error) => {
    if (current === started) current = undefined
    clearTimeout(started.idle)
    for (const failUpload of started.pending) failUpload(error)
    started.pending.clear()
  }
  worker.on("error", fail)
  worker.on("exit", (code) => fail(new Error(`the bundle reader's thread exited with code ${code}`)))
  current = started
  return started
}

/** Ends an upload's use of the thread; after the last one it is stopped if no upload comes within `idleMillis`. */
const release = (used: Thread, upload: (error: Error) => void) => {
  used.pending.delete(upload)
  if (used.pending.size > 0 || current !== used) return
  used.idle = setTimeout(() => {
    if (current === used && used.pending.size === 0) {
      current = undefined
      void used.worker.terminate()
    }
  }, idleMillis)
  used.idle.unref()
}

const refusal = ({ _tag, message, details }: Extract<FromThread, { refused: unknown }>["refused"]): Refusal => {
  const fields = details === undefined ? { message } : { message, details }
  return _tag === "InvalidBundle" ? new Errors.InvalidBundle(fields) : new Errors.PayloadTooLarge(fields)
}

/**
 * `BundlePass.pass` on the worker thread, into the disk store under `folder`. This thread only counts the body's
 * reads against the compressed limit as they arrive, copies them into buffers it hands over (at most
 * `inFlightBatches` ahead of the thread's reader) and waits for the answer. A body that fails, or a read interrupted,
 * tells the thread to drop the upload and waits until it has removed its temporary files, as the in-process pass does
 * before it fails.
 */
export const pass = Effect.fn("InflateWorker.pass")(function* <E>(
  folder: string,
  limits: BundleLimits,
  body: Stream.Stream<Uint8Array, E>
): Effect.fn.Return<Pass, E | Refusal> {
  const answer = yield* Deferred.make<Answer>()
  const { port1: port, port2 } = new MessageChannel()
  const used = thread()
  const lost = (error: Error) => void Deferred.doneUnsafe(answer, Effect.die(error))
  used.pending.add(lost)
  let credit = inFlightBatches
  let waiting: (() => void) | undefined
  port.on("message", (message: FromThread) => {
    if ("credit" in message) {
      credit += message.credit
      const resume = waiting
      waiting = undefined
      resume?.()
    } else {
      Deferred.doneUnsafe(answer, Effect.succeed(message))
    }
  })
  const job: Job = { port: port2, folder, limits }
  used.worker.postMessage(job, [port2])
  const send = (message: ToThread) => port.postMessage(message, typeof message === "string" ? [] : [message])

  const counted = compressedCount(limits)
  const hand = (chunks: ReadonlyArray<Uint8Array>): Effect.Effect<void, Refusal> => {
    const over = counted(chunks)
    if (over !== undefined) return Effect.fail(over)
    let bytes = 0
    for (const chunk of chunks) bytes += chunk.byteLength
    const copy = new Uint8Array(bytes)
    let offset = 0
    for (const chunk of chunks) {
      copy.set(chunk, offset)
      offset += chunk.byteLength
    }
    send(copy.buffer)
    credit -= 1
    return credit > 0
      ? Effect.void
      : Effect.callback<void>((resume) => {
          if (credit > 0) resume(Effect.void)
          else waiting = () => resume(Effect.void)
        })
  }
  const sending = yield* Effect.forkChild(
    Stream.runForEachArray(body, hand).pipe(Effect.andThen(Effect.sync(() => send("end")))),
    { startImmediately: true }
  )
  const settled = Effect.raceFirst(Deferred.await(answer), Fiber.join(sending).pipe(Effect.andThen(Effect.never))).pipe(
    Effect.onExit((exit) =>
      Effect.gen(function* () {
        yield* Fiber.interrupt(sending)
        if (Exit.isFailure(exit) && !(yield* Deferred.isDone(answer))) {
          send("abort")
          yield* Deferred.await(answer)
        }
        port.close()
        release(used, lost)
      })
    )
  )
  const settledAnswer = yield* settled
  if ("passed" in settledAnswer) return settledAnswer.passed
  if ("refused" in settledAnswer) return yield* Effect.fail(refusal(settledAnswer.refused))
  if ("defect" in settledAnswer) return yield* Effect.die(new Error(settledAnswer.defect))
  return yield* Effect.die(new Error("the bundle reader's thread dropped an upload it was not asked to"))
})
