import { Context, Effect } from "effect"
import type { Addons } from "../projects/Project.ts"

/** The add-ons of spec 1.8, as the manifest and ProjectDetail spell them. */
export const addonNames = ["database", "storage", "email", "auth", "ai"] as const
export type AddonName = (typeof addonNames)[number]

/** What an add-on area tells the registry; built from ports, since Projects reads it at construction. */
export interface AddonProvider {
  readonly name: AddonName
  /** Whether the project holds a grant. */
  readonly granted: (projectId: string) => Effect.Effect<boolean>
}

/** Every registered add-on, by name; ProjectDetail's `addons` and the overview's flags derive from it. */
export class AddonRegistry extends Context.Service<AddonRegistry, ReadonlyMap<AddonName, AddonProvider>>()(
  "@hostplane/core/addons/AddonRegistry"
) {}

/** The grant flags of a project: an add-on that no area registers is false. */
export const addonFlags = (registry: AddonRegistry["Service"], projectId: string): Effect.Effect<Addons> =>
  Effect.map(
    Effect.forEach(addonNames, (name) => {
      const provider = registry.get(name)
      return provider === undefined ? Effect.succeed(false) : provider.granted(projectId)
    }),
    ([database, storage, email, auth, ai]) => ({ database, storage, email, auth, ai }) as Addons
  )
