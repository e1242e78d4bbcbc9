import { Effect, Schema } from "effect"
import type { Tokens } from "./Tokens.ts"

/**
 * Ids as distinct types (decisions.md part 1 prefixes), so an org id cannot be passed where a project id is expected.
 * The brand only narrows the type: decoding accepts any string, as rows written before may hold any id.
 */
export const UserId = Schema.String.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type
export const OrgId = Schema.String.pipe(Schema.brand("OrgId"))
export type OrgId = typeof OrgId.Type
export const ProjectId = Schema.String.pipe(Schema.brand("ProjectId"))
export type ProjectId = typeof ProjectId.Type
export const DeploymentId = Schema.String.pipe(Schema.brand("DeploymentId"))
export type DeploymentId = typeof DeploymentId.Type
export const OperationId = Schema.String.pipe(Schema.brand("OperationId"))
export type OperationId = typeof OperationId.Type
export const InviteId = Schema.String.pipe(Schema.brand("InviteId"))
export type InviteId = typeof InviteId.Type
export const NotificationId = Schema.String.pipe(Schema.brand("NotificationId"))
export type NotificationId = typeof NotificationId.Type
export const MailId = Schema.String.pipe(Schema.brand("MailId"))
export type MailId = typeof MailId.Type
export const RepoId = Schema.String.pipe(Schema.brand("RepoId"))
export type RepoId = typeof RepoId.Type
export const SshKeyId = Schema.String.pipe(Schema.brand("SshKeyId"))
export type SshKeyId = typeof SshKeyId.Type
export const AccessTokenId = Schema.String.pipe(Schema.brand("AccessTokenId"))
export type AccessTokenId = typeof AccessTokenId.Type
export const LogEventId = Schema.String.pipe(Schema.brand("LogEventId"))
export type LogEventId = typeof LogEventId.Type

const kinds = {
  usr: UserId,
  org: OrgId,
  prj: ProjectId,
  dep: DeploymentId,
  op: OperationId,
  inv: InviteId,
  ntf: NotificationId,
  mail: MailId,
  repo: RepoId,
  key: SshKeyId,
  pat: AccessTokenId,
  log: LogEventId
}
type Kinds = typeof kinds

/** The prefix of each kind of id. */
export type IdPrefix = keyof Kinds

/** The id kind a prefix names: `IdOf<"prj">` is `ProjectId`. */
export type IdOf<P extends IdPrefix> = Kinds[P]["Type"]

/** `id` as the kind its prefix names; for ids that come from outside (a path, a test fixture). */
export const makeId = <P extends IdPrefix>(prefix: P, id: string): IdOf<P> => kinds[prefix].make(id)

/** A new random id of one kind, named by its prefix: `yield* newId(tokens, "prj")` is a `ProjectId`. */
export const newId = <P extends IdPrefix>(tokens: Tokens["Service"], prefix: P): Effect.Effect<IdOf<P>> =>
  Effect.map(tokens.id(prefix), (id) => makeId(prefix, id))
