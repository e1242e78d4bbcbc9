import { Context, Effect, Metric } from "effect"
import { randomBytes } from "node:crypto"

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
  /** Part of the invocation's output was dropped (past the entry module's bound on one invocation's lines). */
  readonly truncated?: boolean
}

/** How an invocation ended, as the edge saw it; `null` when it never reached a worker (the shard did not answer). */
export type InvocationEnd = {
  readonly outcome: InvocationEvent["outcome"]
  /** The worker's status, when it answered. */
  readonly status: number | null
} | null

/** One invocation the edge forwards: its id goes to the worker in the invoke header; `end` counts once. */
export interface Invocation {
  readonly id: string
  readonly end: (end: InvocationEnd) => void
}

export interface LogCollector {
  readonly record: (event: InvocationEvent) => void
  /**
   * An invocation the edge starts. Its event is the edge's end (outcome, status, duration) joined with what the
   * worker's entry module reports under its id (console lines, exceptions).
   */
  readonly begin: (request: {
    readonly projectId: string
    readonly deploymentId: string
    readonly method: string
    readonly url: string
  }) => Invocation
  /** A batch of an entry module's reports, from the project the router loaded the worker for. */
  readonly fromEntry: (projectId: string, reports: ReadonlyArray<unknown>) => void
  /** The newest events this node saw, oldest first (at most 1,000): what a node without a log store keeps. */
  readonly recent: () => ReadonlyArray<InvocationEvent>
  /** Where events go besides `recent` (the logs area's store once the host has one). */
  readonly setSink: (sink: (events: ReadonlyArray<InvocationEvent>) => void) => void
  /**
   * Writes every ended invocation now, without waiting for its module's report: the node is stopping, and an event
   * held back for lines that may still come would be lost with the process.
   */
  readonly drain: () => void
}

/** decisions.md part 13's bound on an event's lines; the store cuts each line to 16 KiB. */
const maxLines = 256

/**
 * How long an ended invocation waits for its entry module's report: the module ships its reports every 25 ms and
 * sends none for an invocation that printed nothing and threw nothing, so such an invocation waits this long.
 */
const reportWaitMs = 1_000
/** How long an ended invocation whose handler's report came waits for lines printed at its very end. */
const settleMs = 50
/**
 * How long an ended invocation whose module said it left work to `ctx.waitUntil` waits for that work's report (the
 * time workerd gives such work after the response); without that word it waits `reportWaitMs`.
 */
const waitUntilMs = 30_000
/** Reports of an invocation whose end has not come (a response still streaming) are kept this long after the last. */
const orphanMs = 10 * 60_000
/** At most this many invocations wait at once; past it the oldest ended ones are written as they are. */
const maxPending = 20_000

interface Pending {
  /** The invocation's number in this collector (its id's last part). */
  readonly seq: number
  /** Its key among the strays, when it waits there instead of under its number. */
  strayKey: string | undefined
  readonly projectId: string
  request:
    | { readonly projectId: string; readonly deploymentId: string; readonly method: string; readonly url: string }
    | undefined
  started: number
  /** When the edge ended it (`undefined` until then), with its outcome and status: fields, not an object per end. */
  endedAt: number | undefined
  outcome: InvocationEvent["outcome"]
  status: number | null
  /** The handler returned or threw: its lines are in (a stream's may still come). */
  done: boolean
  touched: number
  /** Made at its first line or exception: most invocations print nothing, and wait for their report a second. */
  logs: Array<InvocationEvent["logs"][number]> | undefined
  exceptions: Array<InvocationEvent["exceptions"][number]> | undefined
  truncated: boolean
  /** Its event was written, or its reports dropped: a queue's entry for it is stale. */
  gone: boolean
  /** It waits in `settling`: its end and its handler's done report are both in. */
  settling: boolean
  /** Its module said the handler left work to `ctx.waitUntil`: its done report may come long after its end. */
  lingers: boolean
}

/**
 * Entries in the order they joined, each due `delay` after it joined: a queue whose front is always the next due, so
 * a sweep looks only at what is due (not at every invocation waiting). Stale entries are skipped at the front. The
 * entries and their times are two arrays, so an invocation waiting its second makes no queue object.
 */
const makeQueue = (delay: number) => {
  const items: Array<Pending> = []
  const dues: Array<number> = []
  let head = 0
  return {
    push: (one: Pending, now: number) => {
      items.push(one)
      dues.push(now + delay)
    },
    /** The next entry due by `now`, if any. */
    take: (now: number): Pending | undefined => {
      while (head < items.length) {
        const next = items[head]!
        if (!next.gone && dues[head]! > now) return undefined
        head++
        // Dropped from the front in chunks: shifting an array per item is linear in its length.
        if (head >= 1024 && head * 2 >= items.length) {
          items.splice(0, head)
          dues.splice(0, head)
          head = 0
        }
        if (!next.gone) return next
      }
      return undefined
    },
    size: () => items.length - head
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Report = any

type InvocationRequest = Parameters<LogCollector["begin"]>[0]

/** An invocation the edge began: a class, so the busiest path makes no closure per request for its `end`. */
class EdgeInvocation implements Invocation {
  private over = false
  readonly id: string
  readonly seq: number
  readonly request: InvocationRequest
  readonly started: number
  private readonly ended: (invocation: EdgeInvocation, end: InvocationEnd) => void
  constructor(
    id: string,
    seq: number,
    request: InvocationRequest,
    started: number,
    ended: (invocation: EdgeInvocation, end: InvocationEnd) => void
  ) {
    this.id = id
    this.seq = seq
    this.request = request
    this.started = started
    this.ended = ended
  }
  end(end: InvocationEnd) {
    if (this.over) return
    this.over = true
    this.ended(this, end)
  }
}

/** Counted where every invocation passes: bounded labels, no project in them. */
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
const outcomes = Object.keys(invocationsBy) as ReadonlyArray<keyof typeof invocationsBy>
const none: ReadonlyArray<never> = Object.freeze([])

export const makeCollector = Effect.sync((): LogCollector => {
  const recent: Array<InvocationEvent> = []
  let sink: (events: ReadonlyArray<InvocationEvent>) => void = () => {}
  const push = (events: ReadonlyArray<InvocationEvent>) => {
    recent.push(...events)
    // Counted once per outcome and batch, not once per event.
    const counts = { ok: 0, exception: 0, timeout: 0, canceled: 0 }
    for (const event of events) counts[event.outcome]++
    for (const outcome of outcomes)
      if (counts[outcome] > 0) invocationsBy[outcome].updateUnsafe(counts[outcome], noServices)
    if (recent.length > 1_000) recent.splice(0, recent.length - 1_000)
    try {
      sink(events)
    } catch {
      // A failing sink never turns into a worker's failure.
    }
  }

  /** The invocations waiting, by number: a number's hash costs nothing, a string made per invocation did. */
  const pending = new Map<number, Pending>()
  /**
   * Reports under a number whose entry is another project's, while the edge has not yet said whose it is, by project
   * and number: a worker can learn other invocations' ids, so such a report must neither join nor shadow the entry.
   */
  const strays = new Map<string, Pending>()
  const prefix = randomBytes(6).toString("base64url")
  let counter = 0
  /** The number of an id this collector gave out, else `undefined` (no invocation it began can end under it). */
  const seqOf = (id: string): number | undefined => {
    if (id.length <= prefix.length + 1 || !id.startsWith(prefix) || id.charCodeAt(prefix.length) !== 46)
      return undefined
    const digits = id.slice(prefix.length + 1)
    const seq = parseInt(digits, 36)
    return seq > 0 && seq <= counter && seq.toString(36) === digits ? seq : undefined
  }
  let timer: ReturnType<typeof setInterval> | undefined

  const eventOf = (one: Pending): InvocationEvent | undefined => {
    const { request, endedAt } = one
    if (request === undefined || endedAt === undefined) return undefined
    return {
      projectId: request.projectId,
      deploymentId: request.deploymentId,
      timestamp: one.started,
      outcome: one.outcome,
      request: { method: request.method, url: request.url },
      response: one.status === null ? null : { status: one.status },
      durationMs: Math.max(0, endedAt - one.started),
      logs: one.logs ?? none,
      exceptions: one.exceptions ?? none,
      ...(one.truncated ? { truncated: true } : {})
    }
  }

  // Ended invocations whose handler's report came wait `settleMs`; those without it wait `reportWaitMs`, or
  // `waitUntilMs` when their module said work was left to `ctx.waitUntil`; reports whose invocation has not ended are
  // looked at again `orphanMs` after they came.
  const settling = makeQueue(settleMs)
  const waiting = makeQueue(reportWaitMs)
  const lingering = makeQueue(waitUntilMs - reportWaitMs)
  const orphans = makeQueue(orphanMs)

  /** Ends an entry's wait: written when it ended (else its reports are dropped). */
  const close = (one: Pending, out: Array<InvocationEvent>) => {
    one.gone = true
    if (one.strayKey === undefined) pending.delete(one.seq)
    else strays.delete(one.strayKey)
    const event = eventOf(one)
    if (event !== undefined) out.push(event)
  }

  /** An ended invocation whose handler's report is in: due after `settleMs` for lines printed at its very end. */
  const settle = (one: Pending, now: number) => {
    if (one.settling) return
    one.settling = true
    settling.push(one, now)
  }

  /** Writes the invocations whose reports are in (or overdue); drops reports whose invocation never ended. */
  const sweep = () => {
    const now = Date.now()
    const out: Array<InvocationEvent> = []
    for (let one = settling.take(now); one !== undefined; one = settling.take(now)) close(one, out)
    for (let one = waiting.take(now); one !== undefined; one = waiting.take(now)) {
      if (one.settling) continue
      if (one.lingers) lingering.push(one, now)
      else close(one, out)
    }
    for (let one = lingering.take(now); one !== undefined; one = lingering.take(now)) {
      if (!one.settling) close(one, out)
    }
    for (let one = orphans.take(now); one !== undefined; one = orphans.take(now)) {
      if (one.endedAt !== undefined) continue
      // Reported to lately: looked at again later.
      if (now - one.touched < orphanMs) orphans.push(one, one.touched)
      else close(one, out)
    }
    // Past the bound, the oldest go first, as they are: written when ended, else dropped.
    for (const waiting of [pending, strays]) {
      if (waiting.size <= maxPending) continue
      let over = waiting.size - maxPending
      for (const one of waiting.values()) {
        if (over-- <= 0) break
        close(one, out)
      }
    }
    if (out.length > 0) push(out)
    if (pending.size === 0 && strays.size === 0 && timer !== undefined) {
      clearInterval(timer)
      timer = undefined
    }
  }

  const drain = () => {
    const out: Array<InvocationEvent> = []
    for (const one of pending.values()) if (one.endedAt !== undefined) close(one, out)
    if (out.length > 0) push(out)
  }

  /**
   * An invocation's entry, by number and project: a worker can learn its own invocations' ids (it runs in the isolate
   * that reads them), so a report under another project's id must neither join nor shadow that project's invocation.
   * The entry under a number is the first to come; the edge's end says whose the number is (`ended`): a report of
   * another project while the edge has not said waits among the strays, and is dropped once it has (`undefined`).
   */
  const pendingOf = (seq: number, projectId: string, reported: boolean): Pending | undefined => {
    const known = pending.get(seq)
    if (known === undefined) return fresh(seq, undefined, projectId, reported)
    if (known.projectId === projectId) return known
    if (!reported) {
      // The edge's end: the number is this project's, and the entry under it was another's reports.
      known.gone = true
      const key = `${projectId} ${seq}`
      const own = strays.get(key)
      if (own === undefined) return fresh(seq, undefined, projectId, reported)
      strays.delete(key)
      own.strayKey = undefined
      pending.set(seq, own)
      return own
    }
    if (known.request !== undefined) return undefined
    const key = `${projectId} ${seq}`
    return strays.get(key) ?? fresh(seq, key, projectId, reported)
  }

  const fresh = (seq: number, strayKey: string | undefined, projectId: string, reported: boolean): Pending => {
    const now = Date.now()
    const fresh: Pending = {
      seq,
      strayKey,
      projectId,
      request: undefined,
      started: now,
      endedAt: undefined,
      outcome: "ok",
      status: null,
      done: false,
      touched: now,
      logs: undefined,
      exceptions: undefined,
      truncated: false,
      gone: false,
      settling: false,
      lingers: false
    }
    if (strayKey === undefined) pending.set(seq, fresh)
    else strays.set(strayKey, fresh)
    // Reports before the end: dropped unless the end comes (an invocation the edge never saw end).
    if (reported) orphans.push(fresh, now)
    if (timer === undefined) {
      timer = setInterval(sweep, settleMs)
      timer.unref()
    }
    return fresh
  }

  const fromEntry = (projectId: string, reports: ReadonlyArray<unknown>) => {
    for (const report of reports as ReadonlyArray<Report>) {
      if (typeof report?.id !== "string") continue
      const seq = seqOf(report.id)
      if (seq === undefined) continue
      const one = pendingOf(seq, projectId, true)
      if (one === undefined) continue
      const now = Date.now()
      one.touched = now
      if (report.done === true) {
        one.done = true
        if (one.endedAt !== undefined) settle(one, now)
      }
      if (report.truncated === true) one.truncated = true
      if (report.waiting === true) one.lingers = true
      for (const line of Array.isArray(report.logs) ? report.logs : []) {
        const logs = (one.logs ??= [])
        if (logs.length >= maxLines) {
          one.truncated = true
          break
        }
        logs.push({
          level: String(line?.level ?? "log"),
          message: Array.isArray(line?.message) ? line.message : [line?.message],
          timestamp: Number(line?.timestamp ?? Date.now())
        })
      }
      for (const exception of Array.isArray(report.exceptions) ? report.exceptions : []) {
        const exceptions = (one.exceptions ??= [])
        if (exceptions.length >= 16) break
        exceptions.push({
          name: String(exception?.name ?? "Error"),
          message: String(exception?.message ?? ""),
          stack: String(exception?.stack ?? "")
        })
      }
    }
  }

  /** The edge's end of an invocation, once. */
  const ended = (invocation: EdgeInvocation, end: InvocationEnd) => {
    const { request, seq } = invocation
    // A request that never reached a worker, or a deploy check's load (under a project id of its own): no one's
    // invocation.
    if (end === null || request.projectId.startsWith("__")) {
      const reported = pending.get(seq)
      if (reported !== undefined && reported.projectId === request.projectId) close(reported, [])
      const stray = strays.get(`${request.projectId} ${seq}`)
      if (stray !== undefined) close(stray, [])
      return
    }
    const one = pendingOf(seq, request.projectId, false)!
    const now = Date.now()
    one.request = request
    one.started = invocation.started
    one.endedAt = now
    one.outcome = end.outcome
    one.status = end.status
    // The edge's deadline passed: what the worker printed until then is in, and its event is due now.
    if (end.outcome === "timeout") {
      const out: Array<InvocationEvent> = []
      close(one, out)
      push(out)
    } else if (one.done) settle(one, now)
    else waiting.push(one, now)
  }

  const begin: LogCollector["begin"] = (request) => {
    const seq = ++counter
    return new EdgeInvocation(`${prefix}.${seq.toString(36)}`, seq, request, Date.now(), ended)
  }

  return {
    record: (event) => push([event]),
    begin,
    fromEntry,
    recent: () => [...recent],
    setSink: (next) => (sink = next),
    drain
  }
})
