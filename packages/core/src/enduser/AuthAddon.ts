import { Effect, Option } from "effect"
import { addonProvider, defineAddon } from "../addons/Addon.ts"
import { DatabaseStore } from "../database/DatabaseStore.ts"
import { DatabaseRequired } from "../errors/Errors.ts"
import { HostnameStore } from "../hostnames/HostnameStore.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import type { ProjectAccess } from "../kernel/Policy.ts"
import { AuthStore } from "./AuthStore.ts"
import { AuthStatus, defaultAuthSettings, providerEntries } from "./EndUserAuth.ts"

/** Spec 4.9's add-on: grant (member) needs the database add-on; revoke (admin) keeps subscriber data. */
export const authAddon = defineAddon({
  name: "auth",
  status: AuthStatus,
  audit: { grant: "auth.grant", revoke: "auth.revoke" },
  refusals: [DatabaseRequired]
})

/** The project's routed hostnames: where the provider's callbacks must point. */
export const activeHosts = (hostnames: HostnameStore["Service"], projectId: ProjectId) =>
  Effect.map(hostnames.listByProject(projectId), (rows) =>
    rows.filter((row) => row.status === "active").map((row) => row.name)
  )

/**
 * The auth add-on's provider: a grant stores the default settings (sessions and users live in the project's own
 * database, so the database add-on must be there first: 409 `database_required`); a revoke deletes the settings and
 * the providers' sealed secrets, and the project's `service_auth` schema stays untouched.
 */
export const authAddonProvider = Effect.gen(function* () {
  const store = yield* AuthStore
  const databases = yield* DatabaseStore
  const hostnames = yield* HostnameStore

  const status = Effect.fnUntraced(function* (access: ProjectAccess) {
    const grant = yield* store.find(access.project.id)
    const providers = Option.isSome(grant) ? providerEntries(yield* store.providers(access.project.id)) : []
    return {
      granted: Option.isSome(grant),
      configured: providers.length > 0,
      providers,
      hosts: yield* activeHosts(hostnames, access.project.id),
      settings: Option.isSome(grant) ? grant.value.settings : defaultAuthSettings
    } satisfies AuthStatus
  })

  return addonProvider(authAddon, {
    granted: (projectId) => Effect.map(store.find(projectId), Option.isSome),
    connected: Effect.succeed(true),
    status,
    grant: Effect.fnUntraced(function* (write) {
      if (Option.isSome(yield* store.find(write.project.id))) return { answer: yield* status(write), changed: false }
      if (Option.isNone(yield* databases.find(write.project.id))) {
        return yield* new DatabaseRequired({
          message: "end-user sign-in keeps its users in the project's database: grant the database add-on first"
        })
      }
      yield* store.save({ projectId: write.project.id, settings: defaultAuthSettings, grantedAt: write.at })
      return { answer: yield* status(write), changed: true }
    }),
    revoke: (write) => store.remove(write.project.id)
  })
})
