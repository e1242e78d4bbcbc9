import { Context, Effect, Schema } from "effect"

/**
 * Every action an audit row may name: spec part 6's events, then the ones hostplane adds (documented in the README's
 * audit section). Services write rows only through `Mutation`, which takes an `AuditAction`, so a typo cannot compile.
 */
export const auditActions = [
  "org.rename",
  "org.delete",
  "member.add",
  "member.invite",
  "member.uninvite",
  "member.accept",
  "member.role",
  "member.remove",
  "member.leave",
  "hostname.add",
  "hostname.delete",
  "secret.set",
  "secret.delete",
  "email.grant",
  "email.revoke",
  "storage.grant",
  "storage.revoke",
  "auth.grant",
  "auth.settings",
  "auth.revoke",
  "auth.provider.set",
  "auth.provider.delete",
  "ai.grant",
  "ai.revoke",
  "ai.autotopup.on",
  "ai.autotopup.off",
  "access.set",
  "access.bypass.new",
  "access.bypass.revoke",
  "repo.create",
  "repo.update",
  "repo.delete",
  "domain.purchase",
  "domain.import",
  "domain.renew",
  "domain.lock",
  "domain.auth_code",
  "dns.zone.create",
  "dns.zone.delete",
  "dns.rrset.set",
  "dns.rrset.delete",
  // hostplane's own, beyond spec part 6
  "org.create",
  "project.create",
  "project.delete",
  "deployment.create",
  "deployment.rollback",
  "database.create",
  "database.token.create",
  "database.token.delete",
  "database.restore",
  "database.delete"
] as const

export const AuditAction = Schema.Literals(auditActions)
export type AuditAction = typeof AuditAction.Type

/** One audit row as stored: the action is text, so rows written by other versions still read back. */
export const AuditEvent = Schema.Struct({
  action: Schema.String,
  orgId: Schema.NullOr(Schema.String),
  actorId: Schema.NullOr(Schema.String),
  target: Schema.NullOr(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown),
  at: Schema.String
})
export type AuditEvent = typeof AuditEvent.Type

/** Append-only audit log; `record` joins the ambient transaction of the change it describes. */
export class AuditLog extends Context.Service<
  AuditLog,
  {
    readonly record: (event: AuditEvent) => Effect.Effect<void>
    readonly list: (filter: {
      readonly orgId?: string
      readonly action?: string
    }) => Effect.Effect<ReadonlyArray<AuditEvent>>
  }
>()("@hostplane/core/kernel/AuditLog") {}
