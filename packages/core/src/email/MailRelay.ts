import { Clock, Context, Duration, Effect, Layer, Option, Result, Schema, Stream } from "effect"
import { Settings } from "../kernel/Settings.ts"
import {
  BadRequest,
  Forbidden,
  MailRateLimited,
  MailSendFailed,
  MailUnavailable,
  NotFound,
  NotGranted,
  PayloadTooLarge
} from "../errors/Errors.ts"
import { makeId, newId, type ProjectId } from "../kernel/Ids.ts"
import { portOn } from "../kernel/Port.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { MailTransport } from "../mail/Mail.ts"
import { MailConfig } from "../mail/MailConfig.ts"
import { OrgStore } from "../orgs/OrgStore.ts"
import { ProjectStore } from "../projects/ProjectStore.ts"
import type { MailLogRow } from "./Email.ts"
import { EmailStore } from "./EmailStore.ts"
import { readRelayed } from "./Rfc822.ts"

/** The largest message the relay takes, headers and attachments included (Amazon SES's SMTP limit is 10 MB). */
export const maxRelayBytes = 10 * 1024 * 1024

/** What the relay answers: the log row's id and the transport's id, which SNS events name as `mail.messageId`. */
export const MailSent = Schema.Struct({ id: Schema.String, messageId: Schema.String }).annotate({
  identifier: "MailSent"
})
export type MailSent = typeof MailSent.Type

/** The node state's `email` binding (decisions.md part 6). */
export const EmailBinding = Schema.Struct({ address: Schema.String, from: Schema.String, hourlyCap: Schema.Int })
export type EmailBinding = typeof EmailBinding.Type

export type RelayFailure =
  BadRequest | PayloadTooLarge | MailUnavailable | NotFound | NotGranted | Forbidden | MailRateLimited | MailSendFailed

/**
 * The node mail relay of decisions.md parts 6 and 12: a message is taken only from a project with a granted address,
 * sent as that address, within its plan's hourly cap (a slot taken under the address row's lock, so concurrent sends
 * never pass it), handed on byte for byte and logged as an `out` row that keeps it.
 */
export class MailRelay extends Context.Service<
  MailRelay,
  {
    readonly send: (
      projectId: string | undefined,
      body: Stream.Stream<Uint8Array, BadRequest>,
      contentLength: number | undefined
    ) => Effect.Effect<MailSent, RelayFailure>
    /** `{ address, from, hourlyCap }` while granted, else null. */
    readonly binding: (projectId: ProjectId) => Effect.Effect<EmailBinding | null>
  }
>()("@hostplane/core/email/MailRelay") {
  static readonly layer = Layer.effect(
    MailRelay,
    Effect.gen(function* () {
      const store = yield* EmailStore
      const projects = yield* ProjectStore
      const orgs = yield* OrgStore
      const { planLimits } = yield* Settings
      const tokens = yield* Tokens
      // A host may give the services `MailTransport.off` (it sends only from a runner): the relay then answers 503.
      const transport = portOn(yield* MailTransport)
      // A held slot's lease: renewed every third of it while the transport has the message, so only a process that
      // died (or froze) mid-send stops renewing, and its slot stops counting toward the hourly cap once the lease ends.
      const { relayLease } = yield* MailConfig
      const renewEvery = Duration.divideUnsafe(relayLease, 3)
      const leaseFrom = (at: number) => new Date(at + Duration.toMillis(relayLease)).toISOString()

      const tooLarge = new PayloadTooLarge({
        message: `a relayed message is at most ${maxRelayBytes} bytes`,
        details: { limit: maxRelayBytes }
      })

      const read = Effect.fnUntraced(function* (
        body: Stream.Stream<Uint8Array, BadRequest>,
        contentLength: number | undefined
      ) {
        if (contentLength !== undefined && contentLength > maxRelayBytes) return yield* tooLarge
        const chunks: Array<Uint8Array> = []
        let size = 0
        yield* Stream.runForEach(body, (chunk) => {
          size += chunk.length
          if (size > maxRelayBytes) return Effect.fail(tooLarge)
          chunks.push(chunk)
          return Effect.void
        })
        const bytes = new Uint8Array(size)
        let offset = 0
        for (const chunk of chunks) {
          bytes.set(chunk, offset)
          offset += chunk.length
        }
        return bytes
      })

      const capOf = Effect.fnUntraced(function* (orgId: Parameters<OrgStore["Service"]["findById"]>[0]) {
        const org = yield* orgs.findById(orgId)
        return planLimits[Option.isSome(org) ? org.value.plan : "free"].mailHourlyCap
      })

      const send = Effect.fn("MailRelay.send")(function* (
        projectHeader: string | undefined,
        body: Stream.Stream<Uint8Array, BadRequest>,
        contentLength: number | undefined
      ) {
        const projectKey = projectHeader?.trim() ?? ""
        if (projectKey === "") {
          return yield* new BadRequest({ message: "X-Project-Id is required", details: { field: "X-Project-Id" } })
        }
        const raw = yield* read(body, contentLength)
        if (raw.length === 0) return yield* new BadRequest({ message: "the body is empty: send a message/rfc822" })
        const headers = readRelayed(raw)
        if (Result.isFailure(headers)) {
          return yield* new BadRequest({ message: `not a message the relay can send: ${headers.failure}` })
        }
        const message = headers.success
        if (Option.isNone(transport)) {
          return yield* new MailUnavailable({ message: "this deployment gave the relay no mail transport" })
        }
        const id = makeId("prj", projectKey)
        const project = yield* projects.findById(id)
        if (Option.isNone(project) || project.value.deletingSince !== null) {
          return yield* new NotFound({ message: `project ${projectKey} not found` })
        }
        const address = yield* store.addressOf(id)
        if (Option.isNone(address) || !address.value.granted) {
          return yield* new NotGranted({ message: "email is not granted to this project" })
        }
        if (message.fromAddress !== address.value.address.toLowerCase()) {
          return yield* new Forbidden({
            message: `From must be the project's address ${address.value.address}`,
            details: { from: address.value.address }
          })
        }
        const hourlyCap = yield* capOf(project.value.orgId)
        const now = yield* Clock.currentTimeMillis
        const mailId = yield* newId(tokens, "mail")
        const row: MailLogRow = {
          id: mailId,
          projectId: id,
          direction: "out",
          from: message.fromHeader,
          to: message.recipients.join(", "),
          subject: message.subject,
          outcome: "sent",
          size: raw.length,
          spf: null,
          hasRaw: true,
          createdAt: new Date(now).toISOString(),
          providerMessageId: null,
          raw
        }
        // Renews the slot's lease while the transport has the message (a large one over SMTP may take a while).
        const heartbeat = Effect.sleep(renewEvery).pipe(
          Effect.andThen(Clock.currentTimeMillis),
          Effect.flatMap((at) => store.renewOut(mailId, leaseFrom(at))),
          Effect.forever,
          Effect.interruptible
        )
        // Uninterruptible: a client that hangs up mid-send never leaves a held row behind, nor a send unlogged.
        return yield* Effect.uninterruptible(
          Effect.gen(function* () {
            const slot = yield* store.reserveOut(row, {
              since: new Date(now - 3_600_000).toISOString(),
              cap: hourlyCap,
              now: row.createdAt,
              leaseUntil: leaseFrom(now)
            })
            if (slot === "not_granted")
              return yield* new NotGranted({ message: "email is not granted to this project" })
            if (slot === "capped") {
              return yield* new MailRateLimited({
                message: `the hourly cap of ${hourlyCap} messages is reached`,
                details: { hourlyCap }
              })
            }
            const messageId = yield* Effect.scoped(
              Effect.andThen(
                Effect.forkScoped(heartbeat),
                transport.value.sendRaw({
                  id: mailId,
                  from: message.fromAddress,
                  to: message.recipients,
                  raw,
                  messageId: message.messageId
                })
              )
            ).pipe(
              Effect.tapError(() => store.releaseOut(mailId)),
              Effect.mapError(
                (error) => new MailSendFailed({ message: error.message, details: { retryable: error.retryable } })
              )
            )
            yield* store.confirmOut(row, messageId)
            return { id: mailId, messageId }
          })
        )
      })

      const binding = Effect.fn("MailRelay.binding")(function* (projectId: ProjectId) {
        const address = yield* store.addressOf(projectId)
        if (Option.isNone(address) || !address.value.granted) return null
        const project = yield* projects.findById(projectId)
        if (Option.isNone(project)) return null
        const hourlyCap = yield* capOf(project.value.orgId)
        return { address: address.value.address, from: address.value.address, hourlyCap }
      })

      return MailRelay.of({ send, binding })
    })
  )
}
