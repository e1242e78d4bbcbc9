import { Context, Effect, Layer } from "effect"
import { type Forbidden, NoCore, type NotFound, type OpInFlight } from "../errors/Errors.ts"
import type { Actor } from "../kernel/Actor.ts"
import { audited, Mutation, type ProjectWrite, unaudited, unlisted } from "../kernel/Mutation.ts"
import { Policy } from "../kernel/Policy.ts"
import { addonRules } from "./AddonRules.ts"
import {
  type AddonProvider,
  AddonRegistry,
  type AnyAddonDefinition,
  type GrantedOf,
  type GrantOutcome,
  type RefusalOf,
  type StatusOf
} from "./Addon.ts"

/**
 * Grant, revoke and status of every add-on alike (spec 4.6-4.10): status viewer, grant member, revoke admin; an
 * outsider or unknown project 404, a lower role 403; then 503 `no_core` when the add-on's backend is not connected
 * (decisions.md part 12: authorization, then availability, then state), then 409 `op_in_flight` once the project's
 * delete is accepted. A change runs in `Mutation.project`, writes its audit row (`<name>.grant` / `<name>.revoke`) and
 * raises the node revision; a repeat does neither.
 */
export class Addons extends Context.Service<
  Addons,
  {
    readonly status: <D extends AnyAddonDefinition>(
      definition: D,
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<StatusOf<D>, NotFound | Forbidden | NoCore>
    /** Idempotent: a repeat answers as the first did, with no audit row and no revision. */
    readonly grant: <D extends AnyAddonDefinition>(
      definition: D,
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<GrantedOf<D>, NotFound | Forbidden | NoCore | OpInFlight | RefusalOf<D>>
    /** Idempotent: revoking what is not granted succeeds, with no audit row and no revision. */
    readonly revoke: <D extends AnyAddonDefinition>(
      definition: D,
      actor: Actor,
      orgSlug: string,
      projectName: string
    ) => Effect.Effect<void, NotFound | Forbidden | NoCore | OpInFlight | RefusalOf<D>>
  }
>()("@hostplane/core/addons/Addons") {
  static readonly layer = Layer.effect(
    Addons,
    Effect.gen(function* () {
      const registry = yield* AddonRegistry
      const policy = yield* Policy
      const mutation = yield* Mutation

      const providerOf = <D extends AnyAddonDefinition>(definition: D) => {
        const provider = registry.get(definition.name)
        // A definition served without an area registering its provider is a wiring mistake, not a request error.
        return provider === undefined
          ? Effect.die(new Error(`no area registers the ${definition.name} add-on`))
          : Effect.succeed(provider as AddonProvider<StatusOf<D>, GrantedOf<D>, RefusalOf<D>>)
      }

      const available = (provider: AddonProvider, name: string) =>
        Effect.flatMap(provider.connected, (connected) =>
          connected
            ? Effect.void
            : Effect.fail(new NoCore({ message: `the ${name} add-on's backend is not connected` }))
        )

      /**
       * A grant or revoke: authorized, available, then in `Mutation.project` (the project read again under the lock,
       * refusing one being deleted) the provider's change; only a change is audited and raises the revision.
       */
      const change = <D extends AnyAddonDefinition, A, E>(
        definition: D,
        kind: "grant" | "revoke",
        actor: Actor,
        orgSlug: string,
        projectName: string,
        run: (
          provider: AddonProvider<StatusOf<D>, GrantedOf<D>, RefusalOf<D>>,
          write: ProjectWrite
        ) => Effect.Effect<GrantOutcome<A>, E>
      ) =>
        Effect.gen(function* () {
          const provider = yield* providerOf(definition)
          const authorized = yield* mutation.authorizeProject(actor, orgSlug, projectName, addonRules[kind])
          yield* available(provider, definition.name)
          return yield* mutation.project(
            { ...authorized, deleting: "refuse" },
            (write) =>
              Effect.map(run(provider, write), ({ answer, changed }) => {
                if (!changed) return unaudited(answer)
                const action = definition.audit?.[kind]
                return action === undefined
                  ? unlisted(answer)
                  : audited(answer, { action, target: write.project.id, data: { project: write.project.name } })
              }),
            { node: true }
          )
        })

      const status = Effect.fn("Addons.status")(function* <D extends AnyAddonDefinition>(
        definition: D,
        actor: Actor,
        orgSlug: string,
        projectName: string
      ) {
        const provider = yield* providerOf(definition)
        const access = yield* policy.requireProject(actor, orgSlug, projectName, addonRules.status)
        yield* available(provider, definition.name)
        return yield* provider.status(access)
      })

      const grant = Effect.fn("Addons.grant")(
        <D extends AnyAddonDefinition>(definition: D, actor: Actor, orgSlug: string, projectName: string) =>
          change(definition, "grant", actor, orgSlug, projectName, (provider, write) => provider.grant(write))
      )

      const revoke = Effect.fn("Addons.revoke")(
        <D extends AnyAddonDefinition>(definition: D, actor: Actor, orgSlug: string, projectName: string) =>
          Effect.asVoid(
            change(definition, "revoke", actor, orgSlug, projectName, (provider, write) =>
              Effect.map(provider.revoke(write), (changed) => ({ answer: undefined, changed }))
            )
          )
      )

      return Addons.of({ status, grant, revoke })
    })
  )
}
