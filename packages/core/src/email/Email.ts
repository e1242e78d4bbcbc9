import { Schema } from "effect"
import { MailId, ProjectId } from "../kernel/Ids.ts"

/** `in` for received mail, `out` for mail the node relay sent. */
export const MailDirection = Schema.Literals(["in", "out"])
export type MailDirection = typeof MailDirection.Type

/**
 * What became of a message: `sent` once the transport took it, then `delivered`, `bounced` or `complained` as the
 * provider reports; `received` for delivered inbound mail, `refused` for mail to a revoked address (never delivered).
 */
export const MailOutcome = Schema.Literals(["sent", "delivered", "bounced", "complained", "received", "refused"])
export type MailOutcome = typeof MailOutcome.Type

/** One sent or received message (decisions.md part 4). */
export const MailLogEntry = Schema.Struct({
  id: MailId,
  direction: MailDirection,
  from: Schema.String,
  to: Schema.String,
  subject: Schema.String,
  outcome: MailOutcome,
  size: Schema.Int,
  spf: Schema.NullOr(Schema.String),
  hasRaw: Schema.Boolean,
  createdAt: Schema.String
}).annotate({ identifier: "MailLogEntry" })
export type MailLogEntry = typeof MailLogEntry.Type

export const MailLogPage = Schema.Struct({
  items: Schema.Array(MailLogEntry),
  nextCursor: Schema.NullOr(Schema.String)
}).annotate({ identifier: "MailLogPage" })
export type MailLogPage = typeof MailLogPage.Type

/** A log row as stored: the entry, its project, the transport's message id and the raw message (when kept). */
export interface MailLogRow extends MailLogEntry {
  readonly projectId: ProjectId
  /** The transport's id (SES's, or the outbox `Message-ID`); SNS events find their row by it. */
  readonly providerMessageId: string | null
  readonly raw: Uint8Array | null
}

/** A project's address, kept after a revoke so the address stays fixed and later mail is refused. */
export interface EmailAddressRow {
  readonly projectId: ProjectId
  readonly address: string
  readonly granted: boolean
}

/** EmailStatus of decisions.md part 4: `address` and `from` are a preview until the grant fixes them. */
export const EmailStatus = Schema.Struct({
  granted: Schema.Boolean,
  address: Schema.String,
  from: Schema.String,
  hourlyCap: Schema.Int,
  sent24h: Schema.Int,
  received24h: Schema.Int
}).annotate({ identifier: "EmailStatus" })
export type EmailStatus = typeof EmailStatus.Type
