import { Context, Effect, Metric } from "effect"

/** One invocation as the node reports it (decisions.md part 13's event, before the service assigns its id). */
export interface InvocationEvent {
  readonly projectId: string
  readonly deploymentId: string
  /** Epoch milliseconds when the invocation started. */
  readonly timestamp: number
  readonly outcome: "ok" | "exception" | "timeout" | "canceled"
  readonly request: { readonly method: string; readonly url: string }
  readonly response: { readonly status: number } | null
  readonly durationMs: number
  readonly logs: ReadonlyArray<{
    readonly level: string
    readonly message: ReadonlyArray<unknown>
    readonly timestamp: number
  }>
  readonly exceptions: ReadonlyArray<{ readonly name: string; readonly message: string; readonly stack: string }>
  /** workerd already dropped part of the invocation's output (its own limit on a trace's logs). */
  readonly truncated?: boolean
}

export interface LogCollector {
  readonly record: (event: InvocationEvent) => void
  /** A shard router's tail batch for one project (workerd's tail items). */
  readonly fromTail: (projectId: string, deploymentId: string, items: ReadonlyArray<unknown>) => void
  /** The newest events this node saw, oldest first (at most 1,000): what a node without a log store keeps. */
  readonly recent: () => ReadonlyArray<InvocationEvent>
  /** Where events go besides `recent` (the logs area's store once the host has one). */
  readonly setSink: (sink: (events: ReadonlyArray<InvocationEvent>) => void) => void
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type TailItem = any

/**
 * workerd reports a streamed answer whose client left mid-body as `ok` without a response (its status is recorded
 * only when the body ends): that client went away, so the invocation was canceled.
 */
const outcomeOf = (outcome: unknown, answered: boolean): InvocationEvent["outcome"] =>
  outcome === "ok" ? (answered ? "ok" : "canceled") : outcome === "canceled" ? "canceled" : "exception"

/** A tail item (workerd's trace of one fetch invocation) as an invocation event. */
export const eventOfTail = (projectId: string, deploymentId: string, item: TailItem): InvocationEvent => {
  const request = item?.event?.request ?? {}
  const status = item?.event?.response?.status
  return {
    projectId,
    deploymentId,
    timestamp: Number(item?.eventTimestamp ?? Date.now()),
    outcome: outcomeOf(item?.outcome, typeof status === "number"),
    request: { method: String(request.method ?? "GET"), url: String(request.url ?? "") },
    response: typeof status === "number" ? { status } : null,
    durationMs: Math.max(0, Math.round(Number(item?.wallTime ?? 0))),
    logs: (Array.isArray(item?.logs) ? item.logs : []).map((line: TailItem) => ({
      level: String(line?.level ?? "log"),
      message: Array.isArray(line?.message) ? line.message : [line?.message],
      timestamp: Number(line?.timestamp ?? Date.now())
    })),
    exceptions: (Array.isArray(item?.exceptions) ? item.exceptions : []).map((exception: TailItem) => ({
      name: String(exception?.name ?? "Error"),
      message: String(exception?.message ?? ""),
      stack: String(exception?.stack ?? "")
    })),
    ...(item?.truncated === true ? { truncated: true } : {})
  }
}

/** Counted where every invocation passes (the edge's and the tail's): bounded labels, no project in them. */
const invocations = Metric.counter("hostplane_worker_invocations_total", {
  description: "Worker invocations this node ran, by outcome (ok, exception, timeout, canceled)",
  incremental: true
})
const invocationsBy = {
  ok: Metric.withAttributes(invocations, { outcome: "ok" }),
  exception: Metric.withAttributes(invocations, { outcome: "exception" }),
  timeout: Metric.withAttributes(invocations, { outcome: "timeout" }),
  canceled: Metric.withAttributes(invocations, { outcome: "canceled" })
}
const noServices = Context.empty()

export const makeCollector = Effect.sync((): LogCollector => {
  const recent: Array<InvocationEvent> = []
  let sink: (events: ReadonlyArray<InvocationEvent>) => void = () => {}
  const push = (events: ReadonlyArray<InvocationEvent>) => {
    recent.push(...events)
    for (const event of events) invocationsBy[event.outcome].updateUnsafe(1, noServices)
    if (recent.length > 1_000) recent.splice(0, recent.length - 1_000)
    try {
      sink(events)
    } catch {
      // A failing sink never turns into a worker's failure.
    }
  }
  return {
    record: (event) => push([event]),
    fromTail: (projectId, deploymentId, items) =>
      // Deploy checks load code under a project id of their own: they are no one's invocations.
      projectId.startsWith("__")
        ? undefined
        : push(
            items
              .filter((item: TailItem) => item?.event?.request !== undefined)
              .map((item) => eventOfTail(projectId, deploymentId, item))
          ),
    recent: () => [...recent],
    setSink: (next) => (sink = next)
  }
})
