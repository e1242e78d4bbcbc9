import { Schema } from "effect"
import type { ErrorCode } from "./ErrorCode.ts"

/** Extra machine-readable facts an error carries to the envelope (`details`). */
export const Details = Schema.Record(Schema.String, Schema.Unknown)
export type Details = typeof Details.Type

const fields = { message: Schema.String, details: Schema.optionalKey(Details) }

/** `bad_request` */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {
  static readonly code = "bad_request" satisfies ErrorCode
}

/** `confirm_mismatch` */
export class ConfirmMismatch extends Schema.TaggedError<ConfirmMismatch>()("ConfirmMismatch", fields) {
  static readonly code = "confirm_mismatch" satisfies ErrorCode
}

/** `reserved_name` */
export class ReservedName extends Schema.TaggedError<ReservedName>()("ReservedName", fields) {
  static readonly code = "reserved_name" satisfies ErrorCode
}

/** `invalid_provider` */
export class InvalidProvider extends Schema.TaggedError<InvalidProvider>()("InvalidProvider", fields) {
  static readonly code = "invalid_provider" satisfies ErrorCode
}

/** `invalid_bundle` */
export class InvalidBundle extends Schema.TaggedError<InvalidBundle>()("InvalidBundle", fields) {
  static readonly code = "invalid_bundle" satisfies ErrorCode
}

/** `unauthorized` */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {
  static readonly code = "unauthorized" satisfies ErrorCode
}

/** `payment_failed` */
export class PaymentFailed extends Schema.TaggedError<PaymentFailed>()("PaymentFailed", fields) {
  static readonly code = "payment_failed" satisfies ErrorCode
}

/** `forbidden` */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {
  static readonly code = "forbidden" satisfies ErrorCode
}

/** `not_found` */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  static readonly code = "not_found" satisfies ErrorCode
}

/** `not_granted` */
export class NotGranted extends Schema.TaggedError<NotGranted>()("NotGranted", fields) {
  static readonly code = "not_granted" satisfies ErrorCode
}

/** `user_not_found` */
export class UserNotFound extends Schema.TaggedError<UserNotFound>()("UserNotFound", fields) {
  static readonly code = "user_not_found" satisfies ErrorCode
}

/** `unknown_hostname` */
export class UnknownHostname extends Schema.TaggedError<UnknownHostname>()("UnknownHostname", fields) {
  static readonly code = "unknown_hostname" satisfies ErrorCode
}

/** `no_ref` */
export class NoRef extends Schema.TaggedError<NoRef>()("NoRef", fields) {
  static readonly code = "no_ref" satisfies ErrorCode
}

/** `no_path` */
export class NoPath extends Schema.TaggedError<NoPath>()("NoPath", fields) {
  static readonly code = "no_path" satisfies ErrorCode
}

/** `method_not_allowed` */
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", fields) {
  static readonly code = "method_not_allowed" satisfies ErrorCode
}

/** `slug_taken` */
export class SlugTaken extends Schema.TaggedError<SlugTaken>()("SlugTaken", fields) {
  static readonly code = "slug_taken" satisfies ErrorCode
}

/** `org_not_empty` */
export class OrgNotEmpty extends Schema.TaggedError<OrgNotEmpty>()("OrgNotEmpty", fields) {
  static readonly code = "org_not_empty" satisfies ErrorCode
}

/** `personal_org` */
export class PersonalOrg extends Schema.TaggedError<PersonalOrg>()("PersonalOrg", fields) {
  static readonly code = "personal_org" satisfies ErrorCode
}

/** `active_subscription` */
export class ActiveSubscription extends Schema.TaggedError<ActiveSubscription>()("ActiveSubscription", fields) {
  static readonly code = "active_subscription" satisfies ErrorCode
}

/** `already_member` */
export class AlreadyMember extends Schema.TaggedError<AlreadyMember>()("AlreadyMember", fields) {
  static readonly code = "already_member" satisfies ErrorCode
}

/** `too_many_invites` */
export class TooManyInvites extends Schema.TaggedError<TooManyInvites>()("TooManyInvites", fields) {
  static readonly code = "too_many_invites" satisfies ErrorCode
}

/** `last_admin` */
export class LastAdmin extends Schema.TaggedError<LastAdmin>()("LastAdmin", fields) {
  static readonly code = "last_admin" satisfies ErrorCode
}

/** `invite_used` */
export class InviteUsed extends Schema.TaggedError<InviteUsed>()("InviteUsed", fields) {
  static readonly code = "invite_used" satisfies ErrorCode
}

/** `invite_revoked` */
export class InviteRevoked extends Schema.TaggedError<InviteRevoked>()("InviteRevoked", fields) {
  static readonly code = "invite_revoked" satisfies ErrorCode
}

/** `invite_expired` */
export class InviteExpired extends Schema.TaggedError<InviteExpired>()("InviteExpired", fields) {
  static readonly code = "invite_expired" satisfies ErrorCode
}

/** `project_name_taken` */
export class ProjectNameTaken extends Schema.TaggedError<ProjectNameTaken>()("ProjectNameTaken", fields) {
  static readonly code = "project_name_taken" satisfies ErrorCode
}

/** `hostname_taken` */
export class HostnameTaken extends Schema.TaggedError<HostnameTaken>()("HostnameTaken", fields) {
  static readonly code = "hostname_taken" satisfies ErrorCode
}

/** `project_limit` */
export class ProjectLimitReached extends Schema.TaggedError<ProjectLimitReached>()("ProjectLimitReached", fields) {
  static readonly code = "project_limit" satisfies ErrorCode
}

/** `idempotency_key_in_use`: an earlier request with the same key is still running. */
export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", fields) {
  static readonly code = "idempotency_key_in_use" satisfies ErrorCode
}

/** `idempotency_key_reused`: the key was first used for another request (method, path or body). */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", fields) {
  static readonly code = "idempotency_key_reused" satisfies ErrorCode
}

/** `op_in_flight` */
export class OpInFlight extends Schema.TaggedError<OpInFlight>()("OpInFlight", fields) {
  static readonly code = "op_in_flight" satisfies ErrorCode
}

/** `email_unavailable` */
export class EmailUnavailable extends Schema.TaggedError<EmailUnavailable>()("EmailUnavailable", fields) {
  static readonly code = "email_unavailable" satisfies ErrorCode
}

/** `email_address_taken` */
export class EmailAddressTaken extends Schema.TaggedError<EmailAddressTaken>()("EmailAddressTaken", fields) {
  static readonly code = "email_address_taken" satisfies ErrorCode
}

/** `database_required` */
export class DatabaseRequired extends Schema.TaggedError<DatabaseRequired>()("DatabaseRequired", fields) {
  static readonly code = "database_required" satisfies ErrorCode
}

/** `suspended` */
export class Suspended extends Schema.TaggedError<Suspended>()("Suspended", fields) {
  static readonly code = "suspended" satisfies ErrorCode
}

/** `operation_in_progress` */
export class OperationInProgress extends Schema.TaggedError<OperationInProgress>()("OperationInProgress", fields) {
  static readonly code = "operation_in_progress" satisfies ErrorCode
}

/** `not_abortable` */
export class NotAbortable extends Schema.TaggedError<NotAbortable>()("NotAbortable", fields) {
  static readonly code = "not_abortable" satisfies ErrorCode
}

/** `domain_taken` */
export class DomainTaken extends Schema.TaggedError<DomainTaken>()("DomainTaken", fields) {
  static readonly code = "domain_taken" satisfies ErrorCode
}

/** `domain_unavailable` */
export class DomainUnavailable extends Schema.TaggedError<DomainUnavailable>()("DomainUnavailable", fields) {
  static readonly code = "domain_unavailable" satisfies ErrorCode
}

/** `not_registered_here`: renew, lock, auth code or sync of a domain this service does not hold at the registrar. */
export class NotRegisteredHere extends Schema.TaggedError<NotRegisteredHere>()("NotRegisteredHere", fields) {
  static readonly code = "not_registered_here" satisfies ErrorCode
}

/** `zone_taken` */
export class ZoneTaken extends Schema.TaggedError<ZoneTaken>()("ZoneTaken", fields) {
  static readonly code = "zone_taken" satisfies ErrorCode
}

/** `managed_rrset` */
export class ManagedRrset extends Schema.TaggedError<ManagedRrset>()("ManagedRrset", fields) {
  static readonly code = "managed_rrset" satisfies ErrorCode
}

/** `cname_conflict` */
export class CnameConflict extends Schema.TaggedError<CnameConflict>()("CnameConflict", fields) {
  static readonly code = "cname_conflict" satisfies ErrorCode
}

/** `dnssec_off` */
export class DnssecOff extends Schema.TaggedError<DnssecOff>()("DnssecOff", fields) {
  static readonly code = "dnssec_off" satisfies ErrorCode
}

/** `repo_exists` */
export class RepoExists extends Schema.TaggedError<RepoExists>()("RepoExists", fields) {
  static readonly code = "repo_exists" satisfies ErrorCode
}

/** `ssh_key_exists` */
export class SshKeyExists extends Schema.TaggedError<SshKeyExists>()("SshKeyExists", fields) {
  static readonly code = "ssh_key_exists" satisfies ErrorCode
}

/** `already_pro` */
export class AlreadyPro extends Schema.TaggedError<AlreadyPro>()("AlreadyPro", fields) {
  static readonly code = "already_pro" satisfies ErrorCode
}

/** `not_pro` */
export class NotPro extends Schema.TaggedError<NotPro>()("NotPro", fields) {
  static readonly code = "not_pro" satisfies ErrorCode
}

/** `no_payment_method` */
export class NoPaymentMethod extends Schema.TaggedError<NoPaymentMethod>()("NoPaymentMethod", fields) {
  static readonly code = "no_payment_method" satisfies ErrorCode
}

/** `payload_too_large` */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {
  static readonly code = "payload_too_large" satisfies ErrorCode
}

/** `registrar_rejected` */
export class RegistrarRejected extends Schema.TaggedError<RegistrarRejected>()("RegistrarRejected", fields) {
  static readonly code = "registrar_rejected" satisfies ErrorCode
}

/** `internal` */
export class Internal extends Schema.TaggedError<Internal>()("Internal", fields) {
  static readonly code = "internal" satisfies ErrorCode
}

/** `billing_off` */
export class BillingOff extends Schema.TaggedError<BillingOff>()("BillingOff", fields) {
  static readonly code = "billing_off" satisfies ErrorCode
}

/** `mail_webhook_off`: our own (decisions.md part 1): the mail webhook without `SERVICE_MAIL_TOPIC_ARN`. */
export class MailWebhookOff extends Schema.TaggedError<MailWebhookOff>()("MailWebhookOff", fields) {
  static readonly code = "mail_webhook_off" satisfies ErrorCode
}

/** `mail_rate_limited`: the node relay past the plan's hourly cap. */
export class MailRateLimited extends Schema.TaggedError<MailRateLimited>()("MailRateLimited", fields) {
  static readonly code = "mail_rate_limited" satisfies ErrorCode
}

/** `saga_incomplete` */
export class SagaIncomplete extends Schema.TaggedError<SagaIncomplete>()("SagaIncomplete", fields) {
  static readonly code = "saga_incomplete" satisfies ErrorCode
}

/** `registrar_error` */
export class RegistrarError extends Schema.TaggedError<RegistrarError>()("RegistrarError", fields) {
  static readonly code = "registrar_error" satisfies ErrorCode
}

/** `billing_unavailable` */
export class BillingUnavailable extends Schema.TaggedError<BillingUnavailable>()("BillingUnavailable", fields) {
  static readonly code = "billing_unavailable" satisfies ErrorCode
}

/** `node_api_off`: `SERVICE_NODE_TOKEN` is not set, so the node API is off (decisions.md part 6). */
export class NodeApiOff extends Schema.TaggedError<NodeApiOff>()("NodeApiOff", fields) {
  static readonly code = "node_api_off" satisfies ErrorCode
}

/** `export_failed` */
export class ExportFailed extends Schema.TaggedError<ExportFailed>()("ExportFailed", fields) {
  static readonly code = "export_failed" satisfies ErrorCode
}

/** `no_core` */
export class NoCore extends Schema.TaggedError<NoCore>()("NoCore", fields) {
  static readonly code = "no_core" satisfies ErrorCode
}

/** `dns_not_configured` */
export class DnsNotConfigured extends Schema.TaggedError<DnsNotConfigured>()("DnsNotConfigured", fields) {
  static readonly code = "dns_not_configured" satisfies ErrorCode
}

/** `registrar_not_configured` */
export class RegistrarNotConfigured extends Schema.TaggedError<RegistrarNotConfigured>()(
  "RegistrarNotConfigured",
  fields
) {
  static readonly code = "registrar_not_configured" satisfies ErrorCode
}

/** `no_home_node` */
export class NoHomeNode extends Schema.TaggedError<NoHomeNode>()("NoHomeNode", fields) {
  static readonly code = "no_home_node" satisfies ErrorCode
}

/** `no_node_admin` */
export class NoNodeAdmin extends Schema.TaggedError<NoNodeAdmin>()("NoNodeAdmin", fields) {
  static readonly code = "no_node_admin" satisfies ErrorCode
}

/** `git_unavailable` */
export class GitUnavailable extends Schema.TaggedError<GitUnavailable>()("GitUnavailable", fields) {
  static readonly code = "git_unavailable" satisfies ErrorCode
}

/** `git_unreachable` */
export class GitUnreachable extends Schema.TaggedError<GitUnreachable>()("GitUnreachable", fields) {
  static readonly code = "git_unreachable" satisfies ErrorCode
}

/** `artifact_store_unavailable`: the artifact store (an S3 bucket) did not answer, or lost an object it had. */
export class ArtifactStoreUnavailable extends Schema.TaggedError<ArtifactStoreUnavailable>()(
  "ArtifactStoreUnavailable",
  fields
) {
  static readonly code = "artifact_store_unavailable" satisfies ErrorCode
}

/** `unknown_model`: a model outside the AI catalog (decisions.md part 6). */
export class UnknownModel extends Schema.TaggedError<UnknownModel>()("UnknownModel", fields) {
  static readonly code = "unknown_model" satisfies ErrorCode
}

/** `insufficient_balance`: the org's AI balance is at or below 0. */
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", fields) {
  static readonly code = "insufficient_balance" satisfies ErrorCode
}

/** `daily_limit`: the plan's AI daily spend is reached. */
export class DailyLimit extends Schema.TaggedError<DailyLimit>()("DailyLimit", fields) {
  static readonly code = "daily_limit" satisfies ErrorCode
}

/** `rate_limited`: the plan's AI requests per minute are reached. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", fields) {
  static readonly code = "rate_limited" satisfies ErrorCode
}

/** `ai_upstream_error`: the AI upstream failed or answered an error the caller cannot fix. */
export class AiUpstreamError extends Schema.TaggedError<AiUpstreamError>()("AiUpstreamError", fields) {
  static readonly code = "ai_upstream_error" satisfies ErrorCode
}

/** `ai_unavailable`: no AI upstream credentials in this deployment. */
export class AiUnavailable extends Schema.TaggedError<AiUnavailable>()("AiUnavailable", fields) {
  static readonly code = "ai_unavailable" satisfies ErrorCode
}

/** `mail_send_failed`: the mail transport did not take a relayed message; `details.retryable` says if a retry may. */
export class MailSendFailed extends Schema.TaggedError<MailSendFailed>()("MailSendFailed", fields) {
  static readonly code = "mail_send_failed" satisfies ErrorCode
}

/** `mail_unavailable`: the host gave the services no mail transport, so the node relay cannot send. */
export class MailUnavailable extends Schema.TaggedError<MailUnavailable>()("MailUnavailable", fields) {
  static readonly code = "mail_unavailable" satisfies ErrorCode
}

/** Every error class of the code table, for the HTTP envelope and the table test. */
/** `worker_exception`: the project's worker threw before answering (the edge's 500; the stack goes to the logs). */
export class WorkerException extends Schema.TaggedError<WorkerException>()("WorkerException", fields) {
  static readonly code = "worker_exception" satisfies ErrorCode
}

/**
 * `worker_unavailable`: the worker runtime is off (`SERVICE_WORKERS=off`) or not running, or a node cannot make the
 * worker's env (its control plane does not answer).
 */
export class WorkerUnavailable extends Schema.TaggedError<WorkerUnavailable>()("WorkerUnavailable", fields) {
  static readonly code = "worker_unavailable" satisfies ErrorCode
}

/** End-user sign-in cannot be served now: the project's database (its users and sessions) did not answer. */
export class AuthUnavailable extends Schema.TaggedError<AuthUnavailable>()("AuthUnavailable", fields) {
  static readonly code = "auth_unavailable" satisfies ErrorCode
}

/** `worker_timeout`: the worker's response had not started within `SERVICE_WORKER_TIMEOUT`. */
export class WorkerTimeout extends Schema.TaggedError<WorkerTimeout>()("WorkerTimeout", fields) {
  static readonly code = "worker_timeout" satisfies ErrorCode
}

export const all = [
  BadRequest,
  ConfirmMismatch,
  ReservedName,
  InvalidProvider,
  InvalidBundle,
  Unauthorized,
  PaymentFailed,
  Forbidden,
  NotFound,
  NotGranted,
  UserNotFound,
  UnknownHostname,
  NoRef,
  NoPath,
  MethodNotAllowed,
  SlugTaken,
  OrgNotEmpty,
  PersonalOrg,
  ActiveSubscription,
  AlreadyMember,
  TooManyInvites,
  LastAdmin,
  InviteUsed,
  InviteRevoked,
  InviteExpired,
  ProjectNameTaken,
  HostnameTaken,
  ProjectLimitReached,
  OpInFlight,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  EmailUnavailable,
  EmailAddressTaken,
  DatabaseRequired,
  Suspended,
  OperationInProgress,
  NotAbortable,
  DomainTaken,
  DomainUnavailable,
  NotRegisteredHere,
  ZoneTaken,
  ManagedRrset,
  CnameConflict,
  DnssecOff,
  RepoExists,
  SshKeyExists,
  AlreadyPro,
  NotPro,
  NoPaymentMethod,
  PayloadTooLarge,
  RegistrarRejected,
  Internal,
  BillingOff,
  MailWebhookOff,
  MailRateLimited,
  NodeApiOff,
  SagaIncomplete,
  RegistrarError,
  BillingUnavailable,
  ExportFailed,
  NoCore,
  DnsNotConfigured,
  RegistrarNotConfigured,
  NoHomeNode,
  NoNodeAdmin,
  GitUnavailable,
  GitUnreachable,
  ArtifactStoreUnavailable,
  UnknownModel,
  InsufficientBalance,
  DailyLimit,
  RateLimited,
  AiUnavailable,
  MailSendFailed,
  MailUnavailable,
  AiUpstreamError,
  WorkerException,
  WorkerUnavailable,
  WorkerTimeout,
  AuthUnavailable
] as const

export type ApiFailure = InstanceType<(typeof all)[number]>
