import { Email, Errors, Orgs } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
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
            "URL on `sns.<region>.amazonaws.com`, a `SignatureVersion` other than 1 (SHA1) or 2 (SHA256), or a",
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

const logPath = "/orgs/:orgSlug/projects/:projectName/email/log" as const

/** Spec 4.8's mail log, served in the email add-on's group. */
export const emailLogEndpoints = [
  HttpApiEndpoint.get("log", logPath, {
    params: ProjectRef,
    query: {
      direction: Schema.optionalKey(Schema.String.annotate({ description: "`in`, `out`, or empty for both." })),
      cursor: Schema.optionalKey(Schema.String),
      limit: Schema.optionalKey(Orgs.PageLimit)
    },
    success: Email.MailLogPage,
    error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Forbidden)
  })
    .annotate(OpenApi.Summary, "List the mail log")
    .annotateMerge(
      OpenApi.annotations({
        description: [
          "Viewer or higher. Newest first, one row per sent or received message. `direction` is `in`, `out` or",
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
    .annotateMerge(OpenApi.annotations({ description: "Viewer or higher. An id of another project is 404." })),
  HttpApiEndpoint.get("logRaw", `${logPath}/:mailId/raw`, {
    params: { ...ProjectRef, mailId: Schema.String },
    success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "message/rfc822" })),
    error: apiErrors(Errors.NotFound, Errors.Forbidden)
  })
    .annotate(OpenApi.Summary, "Download a raw message")
    .annotateMerge(
      OpenApi.annotations({
        description: [
          "Viewer or higher. `message/rfc822`, downloaded as `<mailId>.eml`: received mail with the `Received` and",
          "`Authentication-Results` headers the service added, sent mail as given to the relay. 404 when",
          "`hasRaw` is false."
        ].join(" ")
      })
    )
] as const
