import { Context, Effect, type Schema } from "effect"
import type * as Errors from "../errors/Errors.ts"
import type { AuditAction } from "../kernel/Audit.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import type { ProjectWrite } from "../kernel/Mutation.ts"
import type { ProjectAccess } from "../kernel/Policy.ts"
import type { Addons } from "../projects/Project.ts"

/** The add-ons of spec 1.8, as the manifest and ProjectDetail spell them. */
export const addonNames = ["database", "storage", "email", "auth", "ai"] as const
export type AddonName = (typeof addonNames)[number]

/** A core error class of the code table (`Errors.EmailUnavailable`, ...). */
export type ErrorClass = (typeof Errors.all)[number]

/**
 * What an add-on is, shared by core (`Addons`) and http (`addonAreaHttp`): its name (the path segment and the
 * ProjectDetail flag), what its status read and its grant answer, the audit actions of a change, and the errors its
 * grant may refuse with beyond the shared ones.
 */
export interface AddonDefinition<
  Name extends AddonName = AddonName,
  Status extends Schema.Top = Schema.Top,
  Granted extends Schema.Top = Status,
  Refusal extends ErrorClass = never,
  Revocable extends boolean = boolean
> {
  readonly name: Name
  /** The answer of `GET .../<name>` (StorageStatus, EmailStatus, ...). */
  readonly status: Status
  /** The answer of `POST .../<name>`: the status, except for the database (DatabaseConnect). */
  readonly granted: Granted
  /** The audit actions of a grant and a revoke that change something; none for the database (spec part 6). */
  readonly audit: { readonly grant: AuditAction; readonly revoke: AuditAction } | undefined
  /** What a grant or revoke may refuse with after the shared checks (409 `email_unavailable`, `database_required`). */
  readonly refusals: ReadonlyArray<Refusal>
  /** False when the add-on has no `DELETE .../<name>` (the database deletes through an operation). */
  readonly revocable: Revocable
}

/** Any add-on definition. */
export type AnyAddonDefinition = AddonDefinition<AddonName, Schema.Top, Schema.Top, ErrorClass, boolean>

export type StatusOf<D extends AnyAddonDefinition> = D["status"]["Type"]
export type GrantedOf<D extends AnyAddonDefinition> = D["granted"]["Type"]
export type RefusalOf<D extends AnyAddonDefinition> = InstanceType<D["refusals"][number]>

/** Declares an add-on; `granted` defaults to the status, `refusals` to none, `revocable` to true. */
export const defineAddon = <
  const Name extends AddonName,
  Status extends Schema.Top,
  Granted extends Schema.Top = Status,
  const Refusal extends ErrorClass = never,
  const Revocable extends boolean = true
>(definition: {
  readonly name: Name
  readonly status: Status
  readonly granted?: Granted
  readonly audit: { readonly grant: AuditAction; readonly revoke: AuditAction } | undefined
  readonly refusals?: ReadonlyArray<Refusal>
  readonly revocable?: Revocable
}): AddonDefinition<Name, Status, Granted, Refusal, Revocable> => ({
  name: definition.name,
  status: definition.status,
  granted: (definition.granted ?? definition.status) as Granted,
  audit: definition.audit,
  refusals: definition.refusals ?? [],
  revocable: definition.revocable ?? (true as Revocable)
})

/** A grant's answer and whether it changed anything (false for a repeat: no audit row, no revision). */
export interface GrantOutcome<A> {
  readonly answer: A
  readonly changed: boolean
}

/**
 * What an add-on area implements; `Addons` wraps it with the role rules, the availability check, the write envelope,
 * the audit row and the node revision. Built from ports and kernel services, since Projects reads the registry at
 * construction.
 */
export interface AddonProvider<Status = unknown, Granted = unknown, Refusal = unknown> {
  readonly name: AddonName
  /** Whether the project holds a grant: ProjectDetail's `addons` and the overview's `provisioned` flags. */
  readonly granted: (projectId: ProjectId) => Effect.Effect<boolean>
  /** Whether the add-on's backend is reachable now; false answers 503 `no_core` once the caller is authorized. */
  readonly connected: Effect.Effect<boolean>
  /** The status a viewer reads. */
  readonly status: (access: ProjectAccess) => Effect.Effect<Status>
  /** Grants inside the write (org lock held, project read again); a repeat answers the same with `changed` false. */
  readonly grant: (write: ProjectWrite) => Effect.Effect<GrantOutcome<Granted>, Refusal>
  /** Revokes inside the write; false when there was nothing to revoke. */
  readonly revoke: (write: ProjectWrite) => Effect.Effect<boolean, Refusal>
}

/** A provider for `definition`, typed by its schemas and refusals. */
export const addonProvider = <D extends AnyAddonDefinition>(
  definition: D,
  provider: Omit<AddonProvider<StatusOf<D>, GrantedOf<D>, RefusalOf<D>>, "name">
): AddonProvider<StatusOf<D>, GrantedOf<D>, RefusalOf<D>> => ({ name: definition.name, ...provider })

/** Every registered add-on, by name; ProjectDetail's `addons` and the overview's flags derive from it. */
export class AddonRegistry extends Context.Service<AddonRegistry, ReadonlyMap<AddonName, AddonProvider>>()(
  "@hostplane/core/addons/AddonRegistry"
) {}

/** The grant flags of a project: an add-on that no area registers is false. */
export const addonFlags = (registry: AddonRegistry["Service"], projectId: ProjectId): Effect.Effect<Addons> =>
  Effect.map(
    Effect.forEach(addonNames, (name) => {
      const provider = registry.get(name)
      return provider === undefined ? Effect.succeed(false) : provider.granted(projectId)
    }),
    ([database, storage, email, auth, ai]) => ({ database, storage, email, auth, ai }) as Addons
  )
