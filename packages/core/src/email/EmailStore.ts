import { Context, type Effect, type Option } from "effect"
import type { EmailAddressTaken } from "../errors/Errors.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import type { EmailAddressRow, MailDirection, MailLogRow, MailOutcome } from "./Email.ts"

/** A page of the log: newest first (`createdAt`, then `id`, both descending), strictly after `after` when given. */
export interface LogQuery {
  readonly direction: MailDirection | undefined
  readonly after: { readonly createdAt: string; readonly id: string } | undefined
  readonly limit: number
}

/** Project addresses, the mail log and the SNS notifications already applied. */
export class EmailStore extends Context.Service<
  EmailStore,
  {
    /** Inserts or updates a project's address row; another project holding the address is `email_address_taken`. */
    readonly saveAddress: (row: EmailAddressRow) => Effect.Effect<void, EmailAddressTaken>
    /** The address row of a project. */
    readonly addressOf: (projectId: ProjectId) => Effect.Effect<Option.Option<EmailAddressRow>>
    /** The address row holding `address` (lower case). */
    readonly findAddress: (address: string) => Effect.Effect<Option.Option<EmailAddressRow>>
    /** Records an SNS `MessageId`; false when it was recorded before (a replay). Joins the caller's transaction. */
    readonly claimNotification: (messageId: string, type: string, at: string) => Effect.Effect<boolean>
    readonly insertLog: (row: MailLogRow) => Effect.Effect<void>
    /**
     * The relay's slot, taken atomically per project (concurrent sends never pass the cap): while the address is
     * granted and fewer than `cap` `out` rows exist since `since`, inserts `row` held back (not listed, not in the
     * status counts) until `confirmOut`, leased until `leaseUntil`. A held row counts toward the cap only while its
     * lease runs (its process renews it while the transport works): the held rows of a process that died stop counting
     * once their lease ends before `now`, and the project's such rows are deleted here.
     */
    readonly reserveOut: (
      row: MailLogRow,
      limit: { readonly since: string; readonly cap: number; readonly now: string; readonly leaseUntil: string }
    ) => Effect.Effect<"reserved" | "capped" | "not_granted">
    /** Extends a held row's lease; false once it is no longer held (shown, released, or deleted after its lease ended). */
    readonly renewOut: (id: string, leaseUntil: string) => Effect.Effect<boolean>
    /**
     * Shows the held row `row.id` with the transport's id for the message. A row deleted meanwhile (its process
     * stalled past the lease while the transport had the message) is inserted shown, so a sent message keeps its row.
     */
    readonly confirmOut: (row: MailLogRow, providerMessageId: string) => Effect.Effect<void>
    /** Removes a held row whose message the transport did not take. */
    readonly releaseOut: (id: string) => Effect.Effect<void>
    /** Deletes every held row whose lease ended before `now` (its process died mid-send); how many. */
    readonly releaseExpired: (now: string) => Effect.Effect<number>
    /** Sets the outcome of the `out` rows sent with `providerMessageId`; how many rows matched. */
    readonly setOutcome: (providerMessageId: string, outcome: MailOutcome) => Effect.Effect<number>
    readonly listLog: (projectId: ProjectId, query: LogQuery) => Effect.Effect<ReadonlyArray<MailLogRow>>
    /** Rows of the project since `since`, by direction: EmailStatus's 24-hour counts and the relay's hourly cap. */
    readonly countSince: (
      projectId: ProjectId,
      since: string
    ) => Effect.Effect<{ readonly sent: number; readonly received: number }>
    /** Deletes the rows older than the cutoff of their org's plan (`keepDays`); how many. */
    readonly purgeLog: (cutoffs: { readonly free: string; readonly pro: string }) => Effect.Effect<number>
    readonly getLog: (projectId: ProjectId, id: string) => Effect.Effect<Option.Option<MailLogRow>>
  }
>()("@hostplane/core/email/EmailStore") {}
