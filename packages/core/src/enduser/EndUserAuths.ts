import { Context, Effect, Layer, Option, Redacted } from "effect"
import { type Forbidden, InvalidProvider, type NotFound, NotGranted, type OpInFlight } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import { audited, Mutation, type ProjectWrite, unaudited } from "../kernel/Mutation.ts"
import { HostnameStore } from "../hostnames/HostnameStore.ts"
import { Jobs } from "../jobs/Jobs.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { activeHosts } from "./AuthAddon.ts"
import { AuthStore } from "./AuthStore.ts"
import { identitiesDelete } from "./IdentitiesDelete.ts"
import { endUserRules } from "./EndUserRules.ts"
import {
  type AuthBinding,
  type AuthGrantRow,
  type AuthProviderName,
  type AuthProviderPut,
  type AuthSettings,
  type AuthSettingsPatch,
  type AuthStatus,
  clientSecretContext,
  isAuthProviderName,
  providerEntries
} from "./EndUserAuth.ts"

/** A granted project's sign-in as the auth worker runs it: settings and each provider with its secret opened. */
export interface AuthConfig {
  readonly projectId: ProjectId
  readonly settings: AuthSettings
  readonly providers: ReadonlyArray<{
    readonly provider: AuthProviderName
    readonly clientId: string
    readonly clientSecret: Redacted.Redacted<string>
  }>
}

/**
 * Spec 4.9 beyond the generic grant: settings (member), providers (admin) with the client secret sealed before it is
 * stored and never answered, logged or audited. Every change is one `Mutation.project` write with its audit row that
 * raises the node revision (the node's `auth` binding changes).
 */
export class EndUserAuths extends Context.Service<
  EndUserAuths,
  {
    /** Partial: only the fields sent change; 404 `not_granted` while auth is off. */
    readonly patch: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      patch: AuthSettingsPatch
    ) => Effect.Effect<AuthStatus, NotFound | Forbidden | OpInFlight | NotGranted>
    /** Idempotent; rotation is the same call. 400 `invalid_provider` for a name outside the three or an empty field. */
    readonly putProvider: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      provider: string,
      body: AuthProviderPut
    ) => Effect.Effect<AuthStatus, NotFound | Forbidden | OpInFlight | NotGranted | InvalidProvider>
    /** 204 whatever the name: an unknown or unregistered provider changes nothing. */
    readonly deleteProvider: (
      actor: Actor,
      orgSlug: string,
      projectName: string,
      provider: string
    ) => Effect.Effect<void, NotFound | Forbidden | OpInFlight>
    /** The node state's `auth` binding: null when not granted. */
    readonly binding: (projectId: ProjectId) => Effect.Effect<AuthBinding | null>
    /** What the auth worker runs on, with the secrets opened: none when not granted (its routes pass through). */
    readonly config: (projectId: ProjectId) => Effect.Effect<Option.Option<AuthConfig>>
  }
>()("@hostplane/core/enduser/EndUserAuths") {
  static readonly layer = Layer.effect(
    EndUserAuths,
    Effect.gen(function* () {
      const store = yield* AuthStore
      const hostnames = yield* HostnameStore
      const sealer = yield* Sealer
      const mutation = yield* Mutation
      const jobs = yield* Jobs

      const statusOf = Effect.fnUntraced(function* (grant: AuthGrantRow) {
        const providers = providerEntries(yield* store.providers(grant.projectId))
        return {
          granted: true,
          configured: providers.length > 0,
          providers,
          hosts: yield* activeHosts(hostnames, grant.projectId),
          settings: grant.settings
        } satisfies AuthStatus
      })

      const granted = Effect.fnUntraced(function* (write: ProjectWrite) {
        const grant = yield* store.find(write.project.id)
        if (Option.isNone(grant)) {
          return yield* new NotGranted({ message: `end-user sign-in is not granted to ${write.project.name}` })
        }
        return grant.value
      })

      const patch = Effect.fn("EndUserAuths.patch")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        patch: AuthSettingsPatch
      ) {
        const authorized = yield* mutation.authorizeProject(actor, orgSlug, projectName, endUserRules.settings)
        return yield* mutation.project(
          authorized,
          (write) =>
            Effect.gen(function* () {
              const grant = yield* granted(write)
              const settings: AuthSettings = { ...grant.settings, ...patch }
              const changed =
                settings.sessionDays !== grant.settings.sessionDays ||
                settings.allowSignups !== grant.settings.allowSignups
              if (!changed) return unaudited(yield* statusOf(grant))
              const next = { ...grant, settings }
              yield* store.save(next)
              return audited(yield* statusOf(next), {
                action: "auth.settings",
                target: write.project.id,
                data: { project: write.project.name, ...patch }
              })
            }),
          { node: true }
        )
      })

      const putProvider = Effect.fn("EndUserAuths.putProvider")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        provider: string,
        body: AuthProviderPut
      ) {
        const authorized = yield* mutation.authorizeProject(actor, orgSlug, projectName, endUserRules.putProvider)
        if (!isAuthProviderName(provider)) {
          return yield* new InvalidProvider({ message: "the provider is github, google or discord" })
        }
        const clientId = (body.clientId ?? "").trim()
        const clientSecret = body.clientSecret ?? ""
        if (clientId === "" || clientSecret.trim() === "") {
          return yield* new InvalidProvider({ message: "clientId and clientSecret must both be given, not empty" })
        }
        // Sealed before the transaction (no crypto under the org lock), bound to the project and provider.
        const sealedSecret = yield* sealer.seal(clientSecret, clientSecretContext(authorized.project.id, provider))
        return yield* mutation.project(
          authorized,
          (write) =>
            Effect.gen(function* () {
              const grant = yield* granted(write)
              yield* store.putProvider({
                projectId: write.project.id,
                provider,
                clientId,
                sealedSecret,
                updatedAt: write.at
              })
              return audited(yield* statusOf(grant), {
                action: "auth.provider.set",
                target: write.project.id,
                data: { project: write.project.name, provider, clientId }
              })
            }),
          { node: true }
        )
      })

      const deleteProvider = Effect.fn("EndUserAuths.deleteProvider")(function* (
        actor: Actor,
        orgSlug: string,
        projectName: string,
        provider: string
      ) {
        const authorized = yield* mutation.authorizeProject(actor, orgSlug, projectName, endUserRules.deleteProvider)
        if (!isAuthProviderName(provider)) return
        yield* mutation.project(
          authorized,
          (write) =>
            Effect.gen(function* () {
              if (!(yield* store.removeProvider(write.project.id, provider))) return unaudited(undefined)
              // The users' identities of the provider go too, in the project's own database: by a job enqueued in
              // this transaction, so the removal happens exactly when the delete commits, even if that database is
              // down right now.
              yield* jobs.enqueue(identitiesDelete, { projectId: write.project.id, provider, before: write.at })
              return audited(undefined, {
                action: "auth.provider.delete",
                target: write.project.id,
                data: { project: write.project.name, provider }
              })
            }),
          { node: true }
        )
      })

      const binding = Effect.fn("EndUserAuths.binding")(function* (projectId: ProjectId) {
        const grant = yield* store.find(projectId)
        if (Option.isNone(grant)) return null
        return { settings: grant.value.settings, providers: providerEntries(yield* store.providers(projectId)) }
      })

      const config = Effect.fn("EndUserAuths.config")(function* (projectId: ProjectId) {
        const grant = yield* store.find(projectId)
        if (Option.isNone(grant)) return Option.none<AuthConfig>()
        const rows = yield* store.providers(projectId)
        const providers = yield* Effect.forEach(rows, (row) =>
          sealer.open(row.sealedSecret, clientSecretContext(projectId, row.provider)).pipe(
            Effect.map((secret) => ({
              provider: row.provider,
              clientId: row.clientId,
              clientSecret: Redacted.make(secret)
            })),
            Effect.orDie
          )
        )
        return Option.some({ projectId, settings: grant.value.settings, providers })
      })

      return EndUserAuths.of({ patch, putProvider, deleteProvider, binding, config })
    })
  )
}
