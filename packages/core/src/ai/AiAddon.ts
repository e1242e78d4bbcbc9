import { Clock, Effect, Option, Schema } from "effect"
import { addonProvider, defineAddon } from "../addons/Addon.ts"
import { AiLimits } from "../billing/Billing.ts"
import { Settings } from "../kernel/Settings.ts"
import type { ProjectId } from "../kernel/Ids.ts"
import type { ProjectAccess } from "../kernel/Policy.ts"
import { Tokens } from "../kernel/Tokens.ts"
import { Sealer } from "../secrets/Sealer.ts"
import { AiKeyStore } from "./AiKeyStore.ts"
import { CreditStore } from "./CreditStore.ts"

export const AIStatus = Schema.Struct({
  granted: Schema.Boolean,
  limits: AiLimits,
  balanceMicroCents: Schema.Number,
  spentMicroCents24h: Schema.Number
})
export type AIStatus = typeof AIStatus.Type

/** Spec 4.10's add-on: status (viewer), grant (member), revoke (admin); audit `ai.grant`, `ai.revoke`. */
export const aiAddon = defineAddon({ name: "ai", status: AIStatus, audit: { grant: "ai.grant", revoke: "ai.revoke" } })

/** The sealing context of a project's gateway key, so a sealed key cannot be moved to another project. */
export const aiKeyContext = (projectId: ProjectId): string => `${projectId}/ai-key`

/** The prefix of every project AI key. */
export const aiKeyPrefix = "hp_ai_"

const dayMs = 24 * 60 * 60 * 1000

/**
 * The AI add-on's provider: a grant issues the project's gateway key (stored as its SHA-256, and sealed for the node's
 * `ai` binding); a revoke deletes it, so calls with it are 401 at once and the next grant issues a new key. The
 * balance and the ledger belong to the org and stay. Limits are the plan's, read live.
 */
export const aiAddonProvider = Effect.gen(function* () {
  const keys = yield* AiKeyStore
  const { planLimits } = yield* Settings
  const credit = yield* CreditStore
  const tokens = yield* Tokens
  const sealer = yield* Sealer

  const status = Effect.fnUntraced(function* (access: ProjectAccess) {
    const since = new Date((yield* Clock.currentTimeMillis) - dayMs).toISOString()
    return {
      granted: Option.isSome(yield* keys.find(access.project.id)),
      limits: planLimits[access.org.plan].ai,
      balanceMicroCents: (yield* credit.find(access.org.id)).balanceMicroCents,
      spentMicroCents24h: yield* credit.spentSince(access.org.id, since)
    } satisfies AIStatus
  })

  return addonProvider(aiAddon, {
    granted: (projectId) => Effect.map(keys.find(projectId), Option.isSome),
    // The gateway and the ledger live in the control plane itself: nothing outside can be disconnected.
    connected: Effect.succeed(true),
    status,
    grant: (write) =>
      Effect.gen(function* () {
        const existing = yield* keys.find(write.project.id)
        if (Option.isNone(existing)) {
          const key = `${aiKeyPrefix}${yield* tokens.secret(32)}`
          yield* keys.insert({
            projectId: write.project.id,
            keyHash: yield* tokens.hash(key),
            sealed: yield* sealer.seal(key, aiKeyContext(write.project.id)),
            createdAt: write.at
          })
        }
        return { answer: yield* status(write), changed: Option.isNone(existing) }
      }),
    revoke: (write) => keys.remove(write.project.id)
  })
})
