import { Deployments } from "@hostplane/core"
import { Effect, Layer, Option, Result } from "effect"
import * as Http from "node:http"
import { freshNonce, WorkerRuntime } from "./WorkerRuntime.ts"

/** How long a deploy waits for the runtime to load a bundle's worker before refusing it. */
const checkTimeoutMs = 20_000

/**
 * The deploy check of decisions.md part 13: the bundle's entry loaded in the running runtime under a key of its own,
 * the tenant's `fetch` never called. A load that throws (syntax error, missing import, no default export with `fetch`)
 * is 400 `invalid_bundle` `worker_invalid` with workerd's message. With the runtime off nothing is checked.
 */
export const WorkerCheckLive = Layer.effect(
  Deployments.WorkerCheck,
  Effect.gen(function* () {
    const runtime = yield* WorkerRuntime
    const artifacts = yield* Deployments.ArtifactStore
    const check = Effect.fn("WorkerCheck.check")(function* (digest: string, manifest: Deployments.Manifest) {
      if (!runtime.settings.enabled) return
      const index = yield* artifacts.index(digest)
      const paths = Option.isSome(index) ? index.value.files.map((file) => file.path) : []
      const entry = Result.getOrUndefined(Deployments.workerEntry(manifest, paths))
      if (entry === undefined) return
      const key = runtime.register({
        projectId: `__check_${freshNonce()}`,
        deploymentId: "__check",
        digest,
        manifest,
        entry,
        secrets: {},
        bindings: {}
      })
      const failure = yield* Effect.promise(() => loadOnce(runtime, key))
      if (failure !== undefined) {
        return yield* Deployments.invalidBundle("worker_invalid", "the worker's entry does not load in the runtime", {
          path: entry,
          message: failure
        })
      }
    })
    return Deployments.WorkerCheck.of({ check })
  })
)

/** The URL of a load check's request: the router loads the key's worker and never calls its `fetch`. */
export const checkUrl = "http://check.invalid/"

/**
 * Asks the router on `socketPath` to load the key's worker: the runtime's message when it does not load, `undefined`
 * when it does. Rejects when the runtime does not answer (within `timeoutMs` when given).
 */
export const loadFailureOf = (socketPath: string, key: string, timeoutMs?: number) =>
  new Promise<string | undefined>((resolve, reject) => {
    const request = Http.request(
      {
        socketPath,
        path: "/",
        method: "GET",
        ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }),
        headers: { "x-hostplane-invoke": JSON.stringify({ key, url: checkUrl, check: true }) }
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          if (response.headers["x-hostplane-outcome"] !== "exception") return resolve(undefined)
          try {
            const error = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { name: string; message: string }
            resolve(`${error.name}: ${error.message}`)
          } catch {
            resolve("the worker did not load")
          }
        })
      }
    )
    request.on("timeout", () => request.destroy(new Error("no answer in time")))
    request.on("error", reject)
    request.end()
  })

/** Loads the key's worker with a check request; answers the runtime's message when it does not load. */
const loadOnce = async (runtime: WorkerRuntime["Service"], key: string): Promise<string | undefined> => {
  const shard = runtime.shardOf(key)
  try {
    await runtime.ready(shard, checkTimeoutMs)
  } catch {
    return undefined
  }
  // A runtime that cannot answer does not block deploys: the check is skipped.
  const socket = runtime.socketOf(shard)
  const done = runtime.track(socket)
  return loadFailureOf(socket, key, checkTimeoutMs)
    .catch(() => undefined)
    .finally(done)
}
