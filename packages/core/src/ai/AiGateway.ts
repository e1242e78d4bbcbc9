import {
  Cause,
  Clock,
  Context,
  Deferred,
  Duration,
  Effect,
  Layer,
  Option,
  Predicate,
  Queue,
  Scope,
  Semaphore,
  Stream
} from "effect"
import { Settings } from "../kernel/Settings.ts"
import {
  AiUnavailable,
  AiUpstreamError,
  BadRequest,
  DailyLimit,
  InsufficientBalance,
  RateLimited,
  Unauthorized,
  UnknownModel
} from "../errors/Errors.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { JobStore, type RunnerRegistration } from "../jobs/JobStore.ts"
import type { OrgId } from "../kernel/Ids.ts"
import { portOn } from "../kernel/Port.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Transactor } from "../kernel/Transactor.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import { aiKeyPrefix } from "./AiAddon.ts"
import { AiCallStore } from "./AiCallStore.ts"
import { AiCatalog } from "./AiCatalog.ts"
import { AiKeyStore } from "./AiKeyStore.ts"
import { type CatalogEntry, costOf } from "./AiModel.ts"
import { AiUpstream, type UpstreamReply } from "./AiUpstream.ts"
import { autoTopup } from "./AutoTopup.ts"
import { type ChatRequest, parseChatRequest, SseReader, upstreamBody, usageOf, answerChars } from "./Chat.ts"
import { CreditStore } from "./CreditStore.ts"

/** What the gateway answers: a JSON completion, or server-sent events streamed as the upstream sends them. */
export type GatewayAnswer =
  | { readonly _tag: "json"; readonly body: string }
  | { readonly _tag: "stream"; readonly body: Stream.Stream<Uint8Array> }

/** The gateway's refusals (decisions.md part 6), in the order its route lists them. */
export const gatewayErrors = [
  Unauthorized,
  BadRequest,
  UnknownModel,
  RateLimited,
  DailyLimit,
  InsufficientBalance,
  AiUnavailable,
  AiUpstreamError
] as const

export type GatewayError = InstanceType<(typeof gatewayErrors)[number]>

/** An upstream JSON answer (or error body) larger than this is no answer. */
const maxAnswerBytes = 16 * 1024 * 1024
const minuteMs = 60_000
const dayMs = 24 * 60 * minuteMs

/**
 * A pending call's lease: renewed every third of it while the call runs, so only a process that died or froze stops
 * renewing. A dead process's calls are found sooner, by its identity's session lock (`AiCallStore.orphans`).
 */
export const callLease = Duration.seconds(60)
const renewEvery = Duration.divideUnsafe(callLease, 3)

const encoder = new TextEncoder()

/** The body of a reply as text, at most `maxAnswerBytes`. */
const readAll = (reply: UpstreamReply) =>
  Stream.runFold(
    reply.body,
    () => ({ parts: new Array<Uint8Array>(), bytes: 0 }),
    (acc, chunk) => {
      acc.bytes += chunk.length
      if (acc.bytes <= maxAnswerBytes) acc.parts.push(chunk)
      return acc
    }
  ).pipe(
    Effect.map((acc) => {
      if (acc.bytes > maxAnswerBytes) return undefined
      const decoder = new TextDecoder()
      return acc.parts.map((part) => decoder.decode(part, { stream: true })).join("") + decoder.decode()
    })
  )

/** The upstream's own error message (`{ error: { message } }`), shortened. */
const upstreamMessage = (text: string | undefined): string | undefined => {
  try {
    const body: unknown = JSON.parse(text ?? "")
    const message = Predicate.isObject(body) && Predicate.isObject(body.error) ? body.error.message : undefined
    return typeof message === "string" ? message.slice(0, 500) : undefined
  } catch {
    return undefined
  }
}

/** An error status of the upstream in the gateway's words: the caller's mistake (400), too fast (429), else 502. */
const refusal = (status: number, text: string | undefined): GatewayError => {
  const upstream = upstreamMessage(text)
  const details = { upstreamStatus: status, ...(upstream === undefined ? {} : { upstream }) }
  if (status === 400 || status === 413 || status === 422) {
    return new BadRequest({ message: `the AI upstream refused the request${upstream ? `: ${upstream}` : ""}`, details })
  }
  if (status === 429) return new RateLimited({ message: "the AI upstream is rate limiting; retry later", details })
  return new AiUpstreamError({ message: `the AI upstream answered ${status}`, details })
}

/**
 * The AI gateway of decisions.md part 6: a project's key, the catalog, the plan's limits and the org's balance are
 * checked in the order of part 12, then the call goes to the OpenAI-compatible upstream and is charged once from its
 * `usage` at the catalog price. The upstream is read to its end by a fiber of the gateway's own, not the request's,
 * so a caller that disconnects mid-stream is still charged, and the charge settles the call's durable record once.
 */
export class AiGateway extends Context.Service<
  AiGateway,
  {
    /** `key` is the bearer token sent; `body` the raw chat-completions JSON. */
    readonly chat: (key: string | undefined, body: string) => Effect.Effect<GatewayAnswer, GatewayError>
    /**
     * Settles the calls a gateway process died (or froze) in the middle of, once each: charged at the input
     * estimate plus the output streamed before it stopped (a call that may have reached the upstream is never
     * free); a call whose model left the catalog (or with nothing to charge) is released. Answers how many it
     * settled.
     */
    readonly sweep: Effect.Effect<number>
  }
>()("@hostplane/core/ai/AiGateway") {
  static readonly layer = Layer.effect(
    AiGateway,
    Effect.gen(function* () {
      const keys = yield* AiKeyStore
      const { planLimits } = yield* Settings
      const calls = yield* AiCallStore
      const credit = yield* CreditStore
      const projects = yield* ProjectStore
      const orgs = yield* OrgStore
      const catalog = yield* AiCatalog
      const tokens = yield* Tokens
      const tx = yield* Transactor
      const jobs = yield* Jobs
      const upstream = portOn(yield* AiUpstream)
      const jobStore = yield* JobStore
      // Calls outlive their requests (a disconnected caller is still charged) but not the gateway.
      const scope = yield* Effect.scope

      // This process's identity on the calls it owns: a job-runner registration (PostgreSQL: a session lock), taken
      // at the first call and again if the sweep finds it lost, so a crash leaves calls that are visibly orphaned.
      let registration: RunnerRegistration | undefined
      const registering = Semaphore.makeUnsafe(1)
      const owner = registering.withPermit(
        Effect.suspend(() =>
          registration !== undefined
            ? Effect.succeed(registration.owner)
            : Effect.map(Scope.provide(jobStore.register, scope), (fresh) => {
                registration = fresh
                return fresh.owner
              })
        )
      )

      const authenticate = Effect.fnUntraced(function* (key: string | undefined) {
        const refused = new Unauthorized({ message: "an AI key of a granted project is required (Bearer hp_ai_...)" })
        if (key === undefined || !key.startsWith(aiKeyPrefix)) return yield* refused
        const projectId = yield* keys.projectOfKey(yield* tokens.hash(key))
        if (Option.isNone(projectId)) return yield* refused
        const project = yield* projects.findById(projectId.value)
        if (Option.isNone(project) || project.value.deletingSince !== null) return yield* refused
        const org = yield* orgs.findById(project.value.orgId)
        if (Option.isNone(org)) return yield* refused
        return { project: project.value, org: org.value }
      })

      /** Charges a call once and, below the org's threshold, starts its auto top-up in the same transaction. */
      const settle = (callId: string, orgId: OrgId, entry: CatalogEntry, input: number, output: number) =>
        tx
          .withTransaction(
            Effect.gen(function* () {
              const at = new Date(yield* Clock.currentTimeMillis).toISOString()
              const cost = costOf(entry, input, output)
              const balance = yield* calls.charge(callId, {
                inputTokens: input,
                outputTokens: output,
                costMicroCents: cost,
                at
              })
              if (Option.isNone(balance)) return
              const { autoTopup: settings, hasPaymentMethod } = yield* credit.find(orgId)
              const threshold = settings.thresholdMicroCents
              if (settings.enabled && hasPaymentMethod && threshold !== null && balance.value < threshold) {
                yield* jobs.enqueue(
                  autoTopup,
                  { orgId, amountMicroCents: settings.amountMicroCents ?? 0 },
                  { key: orgId }
                )
              }
            })
          )
          .pipe(
            // A failed charge leaves the call `pending` in the database, never half-written.
            Effect.catchCause((cause) => Effect.logError("AI call charge failed", { callId }, cause))
          )

      /** The rest of a JSON answer: read it all, charge it, answer it under the catalog's model name. */
      const answerJson = Effect.fnUntraced(function* (
        reply: UpstreamReply,
        request: ChatRequest,
        callId: string,
        orgId: OrgId,
        entry: CatalogEntry
      ) {
        const text = yield* Effect.option(readAll(reply)).pipe(Effect.map(Option.getOrUndefined))
        let value: unknown
        try {
          value = JSON.parse(text ?? "")
        } catch {
          value = undefined
        }
        const usage = usageOf(value)
        // No usage (a broken or odd answer): the estimate, so a call that reached the upstream is never free.
        yield* settle(
          callId,
          orgId,
          entry,
          usage?.input ?? request.inputTokensEstimate,
          usage?.output ?? Math.ceil(answerChars(value) / 4)
        )
        if (!Predicate.isObject(value)) {
          return yield* new AiUpstreamError({ message: "the AI upstream sent an unreadable answer" })
        }
        return { _tag: "json", body: JSON.stringify({ ...value, model: entry.id }) } as GatewayAnswer
      })

      /** Streams the events to the caller while reading them to the usage chunk; charges once the upstream ends. */
      const answerStream = (
        reply: UpstreamReply,
        request: ChatRequest,
        callId: string,
        orgId: OrgId,
        entry: CatalogEntry,
        answered: Deferred.Deferred<GatewayAnswer, GatewayError>,
        progress: { chars: number }
      ) =>
        Effect.gen(function* () {
          const queue = yield* Queue.unbounded<Uint8Array, Cause.Done>()
          let listening = true
          const reader = new SseReader(
            entry.upstreamModel === entry.id
              ? undefined
              : (value) => {
                  value.model = entry.id
                },
            request.wantsUsage
          )
          const decoder = new TextDecoder()
          const forward = (text: string) =>
            listening && text !== "" ? Queue.offer(queue, encoder.encode(text)) : Effect.void
          yield* Deferred.succeed(answered, {
            _tag: "stream",
            body: Stream.fromQueue(queue).pipe(
              Stream.ensuring(
                Effect.sync(() => {
                  listening = false
                })
              )
            )
          })
          yield* reply.body.pipe(
            Stream.runForEach((chunk) => {
              const text = reader.push(decoder.decode(chunk, { stream: true }))
              progress.chars = reader.chars
              return forward(text)
            }),
            Effect.catch((error) => Effect.logWarning("AI upstream stream broke", { callId, reason: error.message }))
          )
          yield* forward(reader.flush())
          yield* settle(
            callId,
            orgId,
            entry,
            reader.usage?.input ?? request.inputTokensEstimate,
            reader.usage?.output ?? Math.ceil(reader.chars / 4)
          )
          yield* Queue.end(queue)
        })

      const chat = Effect.fn("AiGateway.chat")(function* (key: string | undefined, body: string) {
        const { project, org } = yield* authenticate(key)
        const parsed = parseChatRequest(body)
        if (Array.isArray(parsed)) {
          return yield* new BadRequest({ message: "not a chat-completions request", details: { issues: parsed } })
        }
        const request = parsed as ChatRequest
        const entry = catalog.find(request.model)
        if (entry === undefined) {
          return yield* new UnknownModel({
            message: `${request.model} is not in the catalog (GET /v1/ai/models)`,
            details: { model: request.model }
          })
        }
        const limits = planLimits[org.plan].ai
        if (limits.maxOutputTokens > 0 && (request.maxOutputTokens ?? 0) > limits.maxOutputTokens) {
          return yield* new BadRequest({
            message: `the plan allows at most ${limits.maxOutputTokens} output tokens per call`,
            details: { limit: "maxOutputTokens", maxOutputTokens: limits.maxOutputTokens }
          })
        }
        if (limits.maxInputTokens > 0 && request.inputTokensEstimate > limits.maxInputTokens) {
          return yield* new BadRequest({
            message: `the plan allows at most ${limits.maxInputTokens} input tokens per call`,
            details: {
              limit: "maxInputTokens",
              maxInputTokens: limits.maxInputTokens,
              estimatedInputTokens: request.inputTokensEstimate
            }
          })
        }
        const now = yield* Clock.currentTimeMillis
        const at = new Date(now).toISOString()
        const callId = yield* tokens.id("aic")
        const started = yield* calls.start({
          owner: yield* owner,
          leaseUntil: new Date(now + Duration.toMillis(callLease)).toISOString(),
          inputEstimate: request.inputTokensEstimate,
          id: callId,
          orgId: org.id,
          projectId: project.id,
          projectName: project.name,
          model: entry.id,
          at,
          windowStart: new Date(now - minuteMs).toISOString(),
          perMinute: limits.requestsPerMinute
        })
        if (!started) {
          return yield* new RateLimited({
            message: `the plan allows ${limits.requestsPerMinute} AI calls per minute per project`,
            details: { requestsPerMinute: limits.requestsPerMinute }
          })
        }
        const refuse = <E extends GatewayError>(error: E) => Effect.andThen(calls.abandon(callId), Effect.fail(error))
        const spent = yield* credit.spentSince(org.id, new Date(now - dayMs).toISOString())
        if (spent >= limits.dailySpendMicroCents) {
          return yield* refuse(
            new DailyLimit({
              message: `the plan's daily AI spend of ${limits.dailySpendMicroCents} micro-cents is reached`,
              details: { dailySpendMicroCents: limits.dailySpendMicroCents, spentMicroCents24h: spent }
            })
          )
        }
        const { balanceMicroCents } = yield* credit.find(org.id)
        if (balanceMicroCents <= 0) {
          return yield* refuse(
            new InsufficientBalance({
              message: "the org's AI balance is used up: buy credit",
              details: { balanceMicroCents }
            })
          )
        }
        if (Option.isNone(upstream)) {
          return yield* refuse(new AiUnavailable({ message: "no AI upstream is configured in this deployment" }))
        }
        const send = upstreamBody(request, entry.upstreamModel, limits.maxOutputTokens)
        const answered = yield* Deferred.make<GatewayAnswer, GatewayError>()
        const progress = { chars: 0 }
        // Renews the lease while the call runs (a stream may last minutes); stops with the call.
        const heartbeat = Effect.sleep(renewEvery).pipe(
          Effect.andThen(Clock.currentTimeMillis),
          Effect.flatMap((at) =>
            calls.renew(callId, new Date(at + Duration.toMillis(callLease)).toISOString(), progress.chars)
          ),
          Effect.forever
        )
        const call = Effect.gen(function* () {
          yield* Effect.forkScoped(heartbeat)
          const reply = yield* Effect.result(upstream.value.chat(send))
          if (reply._tag === "Failure") {
            yield* calls.abandon(callId)
            return yield* Deferred.fail(
              answered,
              new AiUpstreamError({ message: `the AI upstream did not answer: ${reply.failure.message}` })
            )
          }
          const { status } = reply.success
          if (status < 200 || status >= 300) {
            const text = yield* Effect.option(readAll(reply.success)).pipe(Effect.map(Option.getOrUndefined))
            yield* calls.abandon(callId)
            return yield* Deferred.fail(answered, refusal(status, text))
          }
          if (request.stream) {
            return yield* answerStream(reply.success, request, callId, org.id, entry, answered, progress)
          }
          yield* Deferred.complete(answered, answerJson(reply.success, request, callId, org.id, entry))
        })
        yield* Effect.forkIn(
          Effect.scoped(call).pipe(
            Effect.catchCause((cause) =>
              Effect.andThen(
                Effect.logError("AI call failed", { callId }, cause),
                Deferred.fail(answered, new AiUpstreamError({ message: "the AI call failed" }))
              )
            )
          ),
          scope
        )
        return yield* Deferred.await(answered)
      })

      const sweep = Effect.gen(function* () {
        // A registration this process lost (its session ended): the next call takes a fresh one.
        if (registration !== undefined && !(yield* registration.alive)) registration = undefined
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const orphans = yield* calls.orphans(now, 200)
        for (const orphan of orphans) {
          const entry = catalog.find(orphan.model)
          // A model gone from the catalog has no price; a call from before calls kept their estimate has no cost.
          if (entry === undefined || (orphan.inputEstimate === 0 && orphan.outputChars === 0)) {
            yield* calls.abandon(orphan.id)
            continue
          }
          const output = Math.ceil(orphan.outputChars / 4)
          yield* Effect.logWarning("AI call settled after its gateway process stopped", {
            callId: orphan.id,
            inputTokens: orphan.inputEstimate,
            outputTokens: output
          })
          yield* settle(orphan.id, orphan.orgId, entry, orphan.inputEstimate, output)
        }
        return orphans.length
      }).pipe(Effect.withSpan("AiGateway.sweep"))

      return AiGateway.of({ chat, sweep })
    })
  )
}
