import { Ai, Database, Edge, Email, EndUser, Errors, type Logs, Node } from "@hostplane/core"
import { Data, Effect, Redacted, Schema, Stream } from "effect"
import type { NodeApiOptions } from "./ArtifactStoreNodeApi.ts"

/** The node API did not answer as it should (unreachable, refused the token, answered what is not its contract). */
export class NodeApiError extends Data.TaggedError("NodeApiError")<{
  readonly message: string
  readonly status?: number | undefined
}> {}

/** The envelope of a refusal (decisions.md part 1): `{ code, message, details? }`. */
interface Envelope {
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

/** Most bytes of one `POST /v1/node/logs` body the node sends (the route takes at most 1 MiB). */
export const maxReportBytes = 900 * 1024

/** Events per report (the route takes 1 to 100). */
const maxReportEvents = 100

const decodeState = Schema.decodeUnknownEffect(Node.NodeState)
const decodeSecrets = Schema.decodeUnknownEffect(Node.OpenedSecrets)
const decodeUsage = Schema.decodeUnknownEffect(Node.UsageRecorded)
const decodeSent = Schema.decodeUnknownEffect(Email.MailSent)
const decodeChecked = Schema.decodeUnknownEffect(Edge.NodeAccessChecked)
const decodePass = Schema.decodeUnknownEffect(Edge.NodePass)
const decodeAuthority = Schema.decodeUnknownEffect(Database.NodeDatabaseAuthority)
const decodeSignedIn = Schema.decodeUnknownEffect(EndUser.NodeSignedIn)
const decodeEndUser = Schema.decodeUnknownEffect(EndUser.NodeEndUser)

/**
 * How long a call a visitor waits on may take (an access check, a pass): past it the visitor gets a 503 to retry
 * rather than a request that hangs with the control plane.
 */
export const visitorCallTimeout = 10_000

/** How long one read of the node state may take. */
const stateReadTimeout = 30_000

/**
 * How long any other call of the node API may take (a report, the mail relay): no call waits for good on a control
 * plane that takes the connection and never answers.
 */
export const callTimeout = 30_000

/**
 * How long the AI gateway may take to start its answer (and to finish one that is not streamed): a model's answer may
 * take minutes; a stream that started is not cut.
 */
export const aiCallTimeout = 300_000

/** The relay's refusals, as the core errors the bindings turn into the worker's codes. */
const relayRefusals = [
  Errors.BadRequest,
  Errors.PayloadTooLarge,
  Errors.MailUnavailable,
  Errors.NotFound,
  Errors.NotGranted,
  Errors.Forbidden,
  Errors.MailRateLimited,
  Errors.MailSendFailed
] as const

interface RefusalClass<E> {
  readonly code: string
  new (fields: { readonly message: string; readonly details?: { readonly [x: string]: unknown } }): E
}

/** The core error of an envelope's code among `classes`, with its message and details. */
const refusalOf = <E>(classes: ReadonlyArray<RefusalClass<E>>, envelope: Envelope): E | undefined => {
  const found = classes.find((error) => error.code === envelope.code)
  if (found === undefined) return undefined
  const details =
    envelope.details !== null && typeof envelope.details === "object"
      ? { details: envelope.details as { readonly [x: string]: unknown } }
      : {}
  return new found({ message: envelope.message, ...details })
}

/**
 * The control plane as a node on another machine reaches it: the node API of decisions.md parts 6 and 13 (state,
 * secrets, usage and invocation reports, the mail relay) with `SERVICE_NODE_TOKEN`, and the AI gateway with each
 * project's own key. Secret values are never logged, nor put in an error.
 */
export const makeNodeApiClient = (options: NodeApiOptions) => {
  const base = options.url.replace(/\/+$/, "")
  const nodeAuth = () => `Bearer ${Redacted.value(options.token)}`
  const visitorTimeout = options.visitorTimeoutMs ?? visitorCallTimeout

  /**
   * One call, abandoned (its connection closed) when the fiber is interrupted or after `timeoutMs` (`callTimeout`
   * unless given), reading its answer included; with `untilAnswer`, only until the answer starts.
   */
  const request = (
    path: string,
    init: RequestInit & { readonly what: string; readonly timeoutMs?: number; readonly untilAnswer?: boolean }
  ) => {
    const { what, timeoutMs = callTimeout, untilAnswer = false, ...rest } = init
    return Effect.tryPromise({
      try: async (signal) => {
        const deadline = new AbortController()
        const timer = setTimeout(() => deadline.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
        // A deadline that outlives its call must not keep a stopping node's event loop alive.
        timer.unref()
        try {
          return await fetch(`${base}${path}`, { ...rest, signal: AbortSignal.any([signal, deadline.signal]) })
        } finally {
          if (untilAnswer) clearTimeout(timer)
        }
      },
      catch: (error) => {
        const reason = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)
        return new NodeApiError({ message: `${what}: the control plane at ${base} did not answer (${reason})` })
      }
    })
  }

  const jsonOf = (response: Response, what: string) =>
    Effect.tryPromise({
      try: () => response.json() as Promise<unknown>,
      catch: () => new NodeApiError({ message: `${what}: the answer is not JSON`, status: response.status })
    })

  /** A non-2xx answer as the envelope it carries (or none when it carries none). */
  const envelopeOf = (response: Response) =>
    Effect.promise(async () => {
      try {
        const body = (await response.json()) as Partial<Envelope>
        return typeof body.code === "string" && typeof body.message === "string" ? (body as Envelope) : undefined
      } catch {
        return undefined
      }
    })

  const refused = (response: Response, what: string) =>
    Effect.flatMap(envelopeOf(response), (envelope) =>
      Effect.fail(
        new NodeApiError({
          message: `${what}: the control plane answered ${response.status}${envelope === undefined ? "" : ` ${envelope.code}: ${envelope.message}`}`,
          status: response.status
        })
      )
    )

  const nodeJson = Effect.fnUntraced(function* (
    path: string,
    what: string,
    init: RequestInit & { readonly timeoutMs?: number } = {}
  ) {
    const response = yield* request(path, {
      ...init,
      what,
      headers: { authorization: nodeAuth(), ...(init.headers as Record<string, string> | undefined) }
    })
    if (!response.ok) return yield* refused(response, what)
    return yield* jsonOf(response, what)
  })

  const invalid = (what: string) => () => new NodeApiError({ message: `${what}: the answer is not the node API's` })

  /** `GET /v1/node/state?after=`: the projects changed after `after`. */
  const state = (after: number) =>
    // A read that never ends would stop the node following the state: it gives up and the next poll tries again.
    Effect.flatMap(nodeJson(`/v1/node/state?after=${after}`, "node state", { timeoutMs: stateReadTimeout }), (body) =>
      Effect.mapError(decodeState(body), invalid("node state"))
    )

  /** `GET /v1/node/database/authority`: the PEM the database clusters' certificates are verified with, or null. */
  const databaseAuthority = Effect.flatMap(
    nodeJson("/v1/node/database/authority", "database authority", { timeoutMs: visitorTimeout }),
    (body) => Effect.mapError(decodeAuthority(body), invalid("database authority"))
  )

  /** `GET /v1/node/projects/{id}/secrets`: the project's secrets, opened; `NotFound` when the project is gone. */
  const secrets = Effect.fnUntraced(function* (projectId: string) {
    const what = "project secrets"
    // A visitor's first request of the project waits on this read.
    const response = yield* request(`/v1/node/projects/${encodeURIComponent(projectId)}/secrets`, {
      what,
      timeoutMs: visitorTimeout,
      headers: { authorization: nodeAuth() }
    })
    if (response.status === 404) {
      return yield* new Errors.NotFound({ message: `project ${projectId} is not on the control plane` })
    }
    if (!response.ok) return yield* refused(response, what)
    return yield* Effect.mapError(decodeSecrets(yield* jsonOf(response, what)), invalid(what))
  })

  /** `POST /v1/node/usage`: the bytes each project's storage prefix holds now. */
  const usage = (report: Node.UsageReport) =>
    Effect.flatMap(
      nodeJson("/v1/node/usage", "usage report", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(report)
      }),
      (body) => Effect.mapError(decodeUsage(body), invalid("usage report"))
    )

  /**
   * `POST /v1/node/logs`, in reports of at most 100 events and `maxReportBytes`; an event too large alone for a report
   * keeps its first log lines that fit and says `truncated`. Answers how many the control plane kept.
   */
  const logs = Effect.fnUntraced(function* (events: ReadonlyArray<Logs.LogEventInput>) {
    let kept = 0
    for (const report of reportsOf(events)) {
      const body = yield* nodeJson("/v1/node/logs", "log report", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: report
      })
      const accepted = (body as { readonly accepted?: unknown }).accepted
      if (typeof accepted === "number") kept += accepted
    }
    return kept
  })

  /** A node route a visitor waits on: JSON in, and the answer's status with its JSON (or envelope) out. */
  const visitorCall = (path: string, what: string, body: unknown) =>
    request(path, {
      what,
      method: "POST",
      timeoutMs: visitorTimeout,
      headers: { authorization: nodeAuth(), "content-type": "application/json" },
      body: JSON.stringify(body)
    })

  /**
   * `POST /v1/node/access/check`: whether the bypass header or the pass cookie admits a visitor under the project's
   * policy now; false for a project the control plane no longer has.
   */
  const accessCheck = Effect.fnUntraced(function* (input: Edge.NodeAccessCheck) {
    const what = "access check"
    const response = yield* visitorCall("/v1/node/access/check", what, input)
    if (response.status === 404) return false
    if (!response.ok) return yield* refused(response, what)
    return (yield* Effect.mapError(decodeChecked(yield* jsonOf(response, what)), invalid(what))).admitted
  })

  /** `POST /v1/node/access/code`: an authorize code for a pass; `Forbidden` with the control plane's reason. */
  const accessCode = Effect.fnUntraced(function* (input: Edge.NodeAccessCode) {
    const what = "access code"
    const response = yield* visitorCall("/v1/node/access/code", what, input)
    if (response.status === 403) {
      const envelope = yield* envelopeOf(response)
      return yield* new Errors.Forbidden({ message: envelope?.message ?? "this sign-in link cannot be used" })
    }
    if (!response.ok) return yield* refused(response, what)
    return yield* Effect.mapError(decodePass(yield* jsonOf(response, what)), invalid(what))
  })

  /** `POST /v1/node/access/password`: a pass when the password is right (`pass` null when not, or no such project). */
  const accessPassword = Effect.fnUntraced(function* (input: Edge.NodeAccessPassword) {
    const what = "access password"
    const response = yield* visitorCall("/v1/node/access/password", what, input)
    if (response.status === 404) return { pass: null, maxAge: 0 } satisfies Edge.NodePass
    if (!response.ok) return yield* refused(response, what)
    return yield* Effect.mapError(decodePass(yield* jsonOf(response, what)), invalid(what))
  })

  /** `POST /v1/node/auth/signin`: the sign-in flow's answer to a visitor's request (null: not granted, or no project). */
  const signIn = Effect.fnUntraced(function* (input: EndUser.NodeSignIn) {
    const what = "end-user sign-in"
    const response = yield* visitorCall("/v1/node/auth/signin", what, input)
    if (response.status === 404) return { answer: null } satisfies EndUser.NodeSignedIn
    if (!response.ok) return yield* refused(response, what)
    return yield* Effect.mapError(decodeSignedIn(yield* jsonOf(response, what)), invalid(what))
  })

  /** `POST /v1/node/auth/user`: the end user of a session cookie (null: none, or no such project). */
  const endUser = Effect.fnUntraced(function* (input: EndUser.NodeEndUserQuery) {
    const what = "end-user session"
    const response = yield* visitorCall("/v1/node/auth/user", what, input)
    if (response.status === 404) return { user: null } satisfies EndUser.NodeEndUser
    if (!response.ok) return yield* refused(response, what)
    return yield* Effect.mapError(decodeEndUser(yield* jsonOf(response, what)), invalid(what))
  })

  /** `POST /v1/node/mail/send`: the relay checks the grant, the From and the hourly cap, sends and logs the row. */
  const sendMail = Effect.fnUntraced(function* (projectId: string, message: Uint8Array) {
    const what = "mail relay"
    const response = yield* request("/v1/node/mail/send", {
      what,
      method: "POST",
      headers: { authorization: nodeAuth(), "content-type": "message/rfc822", "x-project-id": projectId },
      body: message
    })
    if (!response.ok) {
      const envelope = yield* envelopeOf(response)
      const refusal = envelope === undefined ? undefined : refusalOf<Email.RelayFailure>(relayRefusals, envelope)
      if (refusal !== undefined) return yield* Effect.fail(refusal)
      return yield* new NodeApiError({
        message: `${what}: the control plane answered ${response.status}`,
        status: response.status
      })
    }
    return yield* Effect.mapError(decodeSent(yield* jsonOf(response, what)), invalid(what))
  })

  /** `POST /v1/ai/chat/completions` with the project's AI key: the gateway's answer, whole or streamed. */
  const chat = Effect.fnUntraced(function* (key: string | undefined, body: string) {
    const what = "AI gateway"
    const response = yield* request("/v1/ai/chat/completions", {
      what,
      timeoutMs: aiCallTimeout,
      untilAnswer: true,
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(key === undefined ? {} : { authorization: `Bearer ${key}` })
      },
      body
    })
    if (!response.ok) {
      const envelope = yield* envelopeOf(response)
      const refusal = envelope === undefined ? undefined : refusalOf<Ai.GatewayError>(Ai.gatewayErrors, envelope)
      if (refusal !== undefined) return yield* Effect.fail(refusal)
      return yield* new Errors.AiUpstreamError({ message: `${what}: the control plane answered ${response.status}` })
    }
    if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream") && response.body !== null) {
      const stream = response.body
      return {
        _tag: "stream",
        body: Stream.fromReadableStream({ evaluate: () => stream, onError: (error) => error }).pipe(Stream.orDie)
      } satisfies Ai.GatewayAnswer
    }
    const text = yield* Effect.tryPromise({
      try: () => response.text(),
      catch: () => new Errors.AiUpstreamError({ message: `${what}: the answer broke off` })
    })
    return { _tag: "json", body: text } satisfies Ai.GatewayAnswer
  })

  return {
    base,
    state,
    databaseAuthority,
    secrets,
    usage,
    logs,
    sendMail,
    chat,
    accessCheck,
    accessCode,
    accessPassword,
    signIn,
    endUser
  }
}

export type NodeApiClient = ReturnType<typeof makeNodeApiClient>

const encoder = new TextEncoder()
const sizeOf = (value: unknown) => encoder.encode(JSON.stringify(value)).byteLength

/** An event whose JSON passes `maxReportBytes` alone, cut to its first log lines that fit, marked `truncated`. */
const fitted = (event: Logs.LogEventInput): Logs.LogEventInput => {
  if (sizeOf({ events: [event] }) <= maxReportBytes) return event
  const bare = { ...event, logs: [], truncated: true }
  let room = maxReportBytes - sizeOf({ events: [bare] })
  const logs: Array<Logs.LogEventInput["logs"][number]> = []
  for (const line of event.logs) {
    const size = sizeOf(line) + 1
    if (size > room) break
    room -= size
    logs.push(line)
  }
  return { ...bare, logs }
}

/** The JSON bodies of the reports that carry `events`, in order. */
export const reportsOf = (events: ReadonlyArray<Logs.LogEventInput>): Array<string> => {
  const reports: Array<string> = []
  let batch: Array<string> = []
  let bytes = 0
  const close = () => {
    if (batch.length > 0) reports.push(`{"events":[${batch.join(",")}]}`)
    batch = []
    bytes = 0
  }
  for (const event of events) {
    const json = JSON.stringify(fitted(event))
    const size = encoder.encode(json).byteLength + 1
    if (batch.length >= maxReportEvents || bytes + size > maxReportBytes - 16) close()
    batch.push(json)
    bytes += size
  }
  close()
  return reports
}
