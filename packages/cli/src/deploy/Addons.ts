import type { Deployments } from "@hostplane/core"
import { Effect } from "effect"

/**
 * The add-ons a manifest may declare, each with its grant route under the project (spec 1.8 and 4.6 to 4.10), in the
 * order they are granted: `auth` needs a database, so `database` comes first. A new add-on is one line here.
 */
export const addons = [
  { flag: "database", path: "database" },
  { flag: "storage", path: "storage" },
  { flag: "email", path: "email" },
  { flag: "auth", path: "auth" },
  { flag: "ai", path: "ai" }
] as const satisfies ReadonlyArray<{ readonly flag: keyof Deployments.Manifest; readonly path: string }>

export type Addon = (typeof addons)[number]["flag"]

export interface GrantResult {
  readonly addon: Addon
  readonly route: string
  readonly ok: boolean
  readonly status: number | undefined
  readonly code: string | undefined
  readonly message: string | undefined
}

/** The add-ons `service.json` declares (`true` flags), in grant order. */
export const declaredAddons = (manifest: Deployments.Manifest): ReadonlyArray<(typeof addons)[number]> =>
  addons.filter((addon) => manifest[addon.flag] === true)

/**
 * Calls the grant of every declared add-on (the manifest flags grant nothing by themselves: decisions.md part 12).
 * A grant is idempotent, so a redeploy calls them again. Sent as a plain `POST` to the spec's route, so a server
 * without an add-on's routes answers with its own 404 and the deploy reports which grant it could not make.
 */
export const grantAddons = (options: {
  readonly url: string
  readonly token: string
  readonly orgSlug: string
  readonly projectName: string
  readonly manifest: Deployments.Manifest
}): Effect.Effect<ReadonlyArray<GrantResult>> =>
  Effect.forEach(declaredAddons(options.manifest), (addon) => {
    const route = `/v1/orgs/${encodeURIComponent(options.orgSlug)}/projects/${encodeURIComponent(options.projectName)}/${addon.path}`
    return Effect.promise(async (): Promise<GrantResult> => {
      try {
        const reply = await fetch(`${options.url}${route}`, {
          method: "POST",
          headers: { authorization: `Bearer ${options.token}` }
        })
        const text = await reply.text()
        if (reply.ok)
          return { addon: addon.flag, route, ok: true, status: reply.status, code: undefined, message: undefined }
        let code: string | undefined
        let message: string | undefined
        try {
          const envelope = JSON.parse(text) as { code?: unknown; message?: unknown }
          code = typeof envelope.code === "string" ? envelope.code : undefined
          message = typeof envelope.message === "string" ? envelope.message : undefined
        } catch {
          message = text.slice(0, 200)
        }
        // The project was just deployed to, so a 404 or 405 here means the server has no such grant route.
        if (reply.status === 404 || reply.status === 405) {
          message = `this server has no grant for ${addon.flag} (POST ${route} answered ${reply.status}${code === undefined ? "" : ` ${code}`})`
        }
        return { addon: addon.flag, route, ok: false, status: reply.status, code, message }
      } catch (error) {
        return {
          addon: addon.flag,
          route,
          ok: false,
          status: undefined,
          code: "unreachable",
          message: error instanceof Error ? error.message : String(error)
        }
      }
    })
  })
