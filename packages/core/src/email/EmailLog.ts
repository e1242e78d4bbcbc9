import { Context, Effect, Layer, Option } from "effect"
import { emailRules } from "./EmailRules.ts"
import { BadRequest, type Forbidden, NotFound } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { decodePageCursor, defaultPageSize, encodePageCursor, maxPageSize } from "../kernel/PageCursor.ts"
import { Policy } from "../kernel/Policy.ts"
import { type MailDirection, type MailLogEntry, type MailLogPage, type MailLogRow } from "./Email.ts"
import { EmailStore } from "./EmailStore.ts"

export interface LogRequest {
  /** `in`, `out`, or empty for both. */
  readonly direction: string | undefined
  readonly cursor: string | undefined
  readonly limit: number | undefined
}

const entryOf = ({ projectId: _p, providerMessageId: _m, raw: _r, ...entry }: MailLogRow): MailLogEntry => entry

/** The mail log of spec 4.8: viewers read a project's rows, newest first; raw messages only where kept. */
export class EmailLog extends Context.Service<
  EmailLog,
  {
    readonly list: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      request: LogRequest
    ) => Effect.Effect<MailLogPage, NotFound | Forbidden | BadRequest>
    readonly get: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      mailId: string
    ) => Effect.Effect<MailLogEntry, NotFound | Forbidden>
    /** The raw message as kept; 404 when `hasRaw` is false. */
    readonly raw: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      mailId: string
    ) => Effect.Effect<{ readonly id: string; readonly bytes: Uint8Array }, NotFound | Forbidden>
  }
>()("@hostplane/core/email/EmailLog") {
  static readonly layer = Layer.effect(
    EmailLog,
    Effect.gen(function* () {
      const policy = yield* Policy
      const store = yield* EmailStore

      const list = Effect.fn("EmailLog.list")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        request: LogRequest
      ) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, emailRules.log)
        const direction = request.direction ?? ""
        if (direction !== "" && direction !== "in" && direction !== "out") {
          return yield* new BadRequest({ message: "direction is in, out or empty", details: { field: "direction" } })
        }
        const limit = request.limit ?? defaultPageSize
        if (!Number.isInteger(limit) || limit < 1) {
          return yield* new BadRequest({ message: "limit is a positive integer", details: { field: "limit" } })
        }
        const after =
          request.cursor === undefined || request.cursor === ""
            ? Option.none()
            : decodePageCursor(request.cursor, "mail")
        if (request.cursor !== undefined && request.cursor !== "" && Option.isNone(after)) {
          return yield* new BadRequest({ message: "cursor is not one this API returned", details: { field: "cursor" } })
        }
        const size = Math.min(limit, maxPageSize)
        const rows = yield* store.listLog(project.id, {
          direction: direction === "" ? undefined : (direction as MailDirection),
          after: Option.getOrUndefined(after),
          limit: size + 1
        })
        const page = rows.slice(0, size)
        const last = page[page.length - 1]
        return {
          items: page.map(entryOf),
          nextCursor: rows.length > size && last !== undefined ? encodePageCursor(last) : null
        } satisfies MailLogPage
      })

      const find = Effect.fnUntraced(function* (actor: Actor, orgSlug: string, projectName: string, mailId: string) {
        const { project } = yield* policy.requireProject(actor, orgSlug, projectName, emailRules.logEntry)
        const row = yield* store.getLog(project.id, mailId)
        if (Option.isNone(row)) return yield* new NotFound({ message: `no mail ${mailId} in ${projectName}` })
        return row.value
      })

      const get = Effect.fn("EmailLog.get")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        mailId: string
      ) {
        return entryOf(yield* find(actor, orgSlug, projectName, mailId))
      })

      const raw = Effect.fn("EmailLog.raw")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        mailId: string
      ) {
        const row = yield* find(actor, orgSlug, projectName, mailId)
        if (row.raw === null) return yield* new NotFound({ message: `mail ${mailId} has no raw message kept` })
        return { id: row.id, bytes: row.raw }
      })

      return EmailLog.of({ list, get, raw })
    })
  )
}
