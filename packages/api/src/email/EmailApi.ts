import { Email, Errors, Kernel } from "@hostplane/core"
import { withRules } from "../auth/Rules.ts"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { addonGroup } from "../addons/AddonApi.ts"
import { apiErrors } from "../errors/ApiError.ts"
import { ProjectRef } from "../projects/ProjectRef.ts"

/** What the mail webhook answers once a message is accepted (applied, replayed or of a type it ignores). */
export const MailHookAnswer = Schema.Struct({ received: Schema.Literal(true) }).annotate({
  identifier: "MailHookAnswer"
})

/** Spec 4.8 and part 5 point 5: Amazon SNS notifications for Amazon SES; signed, so no session. */
export class MailHooksApi extends HttpApiGroup.make("mailHooks")
  .add(
    HttpApiEndpoint.post("mailer", "/hooks/mailer", {
      // SNS posts JSON as text/plain; the signature covers fields of that text.
      payload: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/plain" })),
      success: MailHookAnswer,
      error: apiErrors(Errors.BadRequest, Errors.Forbidden, Errors.MailWebhookOff)
    })
      .annotate(OpenApi.Summary, "Receive a mail provider notification")
      .annotateMerge(
        OpenApi.annotations({
          description: [
            "Amazon SNS HTTPS messages for Amazon SES (`Type` `SubscriptionConfirmation`, `Notification`,",
            "`UnsubscribeConfirmation`). Without `SERVICE_MAIL_TOPIC_ARN`: 501 `mail_webhook_off`. A body that is not",
            "an SNS message: 400. A `TopicArn` other than the setting, a `SigningCertURL` that is not an https `.pem`",
            "URL on `sns.<region>.amazonaws.com`, a `SignatureVersion` other than 1 (SHA1) or 2 (SHA256), no signature, or a",
            "signature that does not verify over the documented canonical fields: 403. A `SubscriptionConfirmation`",
            "is confirmed by a GET to its `SubscribeURL` (same host rule). `Received` becomes an `in` mail log row",
            "per recipient address (the raw message with the `Received` and `Authentication-Results` headers the",
            "service adds; `refused` and not kept for a revoked address); `Bounce`, `Complaint` and `Delivery` set",
            "the outcome of the `out` row whose transport message id is `mail.messageId`. Unknown types and ids, and",
            "a replayed `MessageId`, answer 200 and change nothing."
          ].join(" ")
        })
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Mail webhook", description: "Inbound mail events (spec 4.8)." })) {}

/** decisions.md parts 6 and 12: the node mail relay, authorized by `SERVICE_NODE_TOKEN` rather than a session. */
export class MailRelayApi extends HttpApiGroup.make("mailRelay")
  .add(
    HttpApiEndpoint.post("send", "/node/mail/send", {
      headers: {
        authorization: Schema.optionalKey(Schema.String.annotate({ description: "`Bearer <SERVICE_NODE_TOKEN>`." })),
        "x-project-id": Schema.optionalKey(Schema.String.annotate({ description: "The sending project's id." }))
      },
      payload: HttpApiSchema.StreamUint8Array({ contentType: "message/rfc822" }),
      success: Email.MailSent.pipe(HttpApiSchema.status(202)),
      error: apiErrors(
        Errors.BadRequest,
        Errors.Unauthorized,
        Errors.Forbidden,
        Errors.NotFound,
        Errors.NotGranted,
        Errors.PayloadTooLarge,
        Errors.MailRateLimited,
        Errors.NodeApiOff,
        Errors.MailSendFailed,
        Errors.MailUnavailable
      )
    })
      .annotate(OpenApi.Summary, "Relay a project's message")
      .annotateMerge(
        OpenApi.annotations({
          description: [
            "Node token as for the node state (unset: 501 `node_api_off`; wrong or missing: 401). Body",
            "`message/rfc822` (another type: 415), at most 10 MiB (413), header `X-Project-Id`. The message is handed",
            "to the mail transport byte for byte, so it must carry exactly one `From` with one address, To/Cc",
            "recipients (1 to 50) and no `Bcc`: otherwise, or without `X-Project-Id`, 400. Unknown project 404;",
            "email not granted 404 `not_granted`; a `From` other than the project's address 403; the plan's hourly",
            "cap reached (`details.hourlyCap`, counted over the last 60 minutes) 429 `mail_rate_limited`; the",
            "transport refused or failed 502 `mail_send_failed` (`details.retryable`); no transport 503",
            "`mail_unavailable`. Answers 202 `{ id, messageId }`: `id` the `out` mail log row (which keeps the raw",
            "message), `messageId` the transport's id (SES over SMTP: the id of its `250` reply; the outbox: the",
            "`Message-ID` without brackets), which SNS Bounce, Complaint and Delivery events are matched against."
          ].join(" ")
        })
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Node mail relay", description: "decisions.md part 6." })) {}

const logPath = "/orgs/:orgSlug/projects/:projectName/email/log" as const

/** Spec 4.8's mail log, served in the email add-on's group. */
export const emailLogEndpoints = [
  HttpApiEndpoint.get("log", logPath, {
    params: ProjectRef,
    query: {
      direction: Schema.optionalKey(Schema.String.annotate({ description: "`in`, `out`, or empty for both." })),
      ...Kernel.PageQuery
    },
    success: Email.MailLogPage,
    error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Forbidden)
  })
    .annotate(OpenApi.Summary, "List the mail log")
    .annotateMerge(
      OpenApi.annotations({
        description: [
          "Newest first, one row per sent or received message. `direction` is `in`, `out` or",
          "empty (both); anything else is 400. `limit` 1..200 (default 50); `cursor` is the previous page's",
          "`nextCursor` (null on the last page). Rows are kept `keepDays` days by plan (30 free, 365 pro)."
        ].join(" ")
      })
    ),
  HttpApiEndpoint.get("logEntry", `${logPath}/:mailId`, {
    params: { ...ProjectRef, mailId: Schema.String },
    success: Email.MailLogEntry,
    error: apiErrors(Errors.NotFound, Errors.Forbidden)
  })
    .annotate(OpenApi.Summary, "Read a mail log entry")
    .annotateMerge(OpenApi.annotations({ description: "An id of another project is 404." })),
  HttpApiEndpoint.get("logRaw", `${logPath}/:mailId/raw`, {
    params: { ...ProjectRef, mailId: Schema.String },
    success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "message/rfc822" })),
    error: apiErrors(Errors.NotFound, Errors.Forbidden)
  })
    .annotate(OpenApi.Summary, "Download a raw message")
    .annotateMerge(
      OpenApi.annotations({
        description: [
          "`message/rfc822`, downloaded as `<mailId>.eml`: received mail with the `Received` and",
          "`Authentication-Results` headers the service added, sent mail as given to the relay. 404 when",
          "`hasRaw` is false."
        ].join(" ")
      })
    )
] as const

/** Spec 4.8's add-on group: status, grant, revoke, and the mail log. */
export const EmailAddonApi = withRules(
  addonGroup(Email.emailAddon, {
    description: "Spec 4.8: a project's email address, its mail log and raw messages.",
    endpoints: emailLogEndpoints
  }),
  Email.emailRules
)
