import { type Context, Effect, Layer } from "effect"
import { type AddonProvider, AddonRegistry } from "./addons/Addon.ts"
import { Mutation } from "./kernel/Mutation.ts"
import { Policy } from "./kernel/Policy.ts"
import type { JobHandler } from "./jobs/Job.ts"
import { JobHandlers } from "./jobs/JobRunner.ts"
import { type AnyAreaNodeBinding, type AreaNodeBinding, NodeBindings } from "./node/NodeBinding.ts"
import { Nodes } from "./node/Nodes.ts"
import { type HoldingCounter, OrgHoldings, OrgSubscriptionCheck, type SubscriptionCheck } from "./orgs/OrgHooks.ts"
import { ProjectTeardown, type TeardownStep } from "./projects/ProjectHooks.ts"

/** What every area's `fromEnv` receives: the defaults the host picks for settings left unset. */
export interface SettingsOptions {
  /** Whether the dev login is on when `SERVICE_DEV_AUTH` is unset. */
  readonly devAuthDefault: boolean
  /** `SERVICE_SITE_URL` when unset (the standalone server: its own edge). */
  readonly siteUrlDefault?: string | undefined
}

/**
 * An area's settings, read by its config service: `key` names its overrides in `configLayer`, `make` builds the
 * config from explicit values (anything left out takes its default), `fromEnv` from the `SERVICE_*` environment.
 */
export interface AreaSettings<K extends string, Out, Over, RMake, E, REnv> {
  readonly key: K
  readonly make: (overrides?: Over) => Layer.Layer<Out, never, RMake>
  readonly fromEnv: (options: SettingsOptions) => Layer.Layer<Out, E, REnv>
}

/** Any area's settings. */
export type AnyAreaSettings = AreaSettings<string, any, any, any, any, any>

/** Declares an area's settings, keeping their types (`configLayer` folds them). */
export const areaSettings = <const K extends string, Out, Over, RMake, E = never, REnv = never>(
  settings: AreaSettings<K, Out, Over, RMake, E, REnv>
): AreaSettings<K, Out, Over, RMake, E, REnv> => settings

/** The settings of each area of a list that declares some. */
export type SettingsOf<A> = A extends { readonly settings?: infer S } ? Exclude<S, undefined> : never

/** What the settings of a list of areas build: their config services. */
export type ConfigsOf<S> = S extends AreaSettings<any, infer Out, any, any, any, any> ? Out : never

/** The explicit values each area's settings take, by key. */
export type OverridesOf<S extends AnyAreaSettings> = {
  readonly [X in S as X["key"]]?: X extends AreaSettings<any, any, infer Over, any, any, any> ? Over : never
}

/** What reading the settings of a list of areas from the environment may fail with and needs. */
export type SettingsErrorOf<S> = S extends AreaSettings<any, any, any, any, infer E, any> ? E : never
export type SettingsNeedsOf<S> =
  S extends AreaSettings<any, any, any, infer RMake, any, infer REnv> ? RMake | REnv : never

/** Every area's config from explicit values, folded in list order. */
export const settingsLayer = (
  areas: ReadonlyArray<AnyArea>,
  overrides: Readonly<Record<string, unknown>>
): Array<Layer.Layer<any, any, any>> =>
  areas.flatMap((area) => (area.settings === undefined ? [] : [area.settings.make(overrides[area.settings.key])]))

/** Every area's config from the environment, folded in list order. */
export const settingsFromEnv = (
  areas: ReadonlyArray<AnyArea>,
  options: SettingsOptions
): Array<Layer.Layer<any, any, any>> =>
  areas.flatMap((area) => (area.settings === undefined ? [] : [area.settings.fromEnv(options)]))

/**
 * What one area contributes to core. Holdings, the subscription check and the add-on are read when `Orgs` and
 * `Projects` are built, so they may use ports and kernel services only; teardown steps are read by the project
 * delete and node bindings by the node state (`Nodes`, built after every area), so both may use any area's services.
 * Job handlers are built where a runner runs (`jobHandlers`), from the
 * services and what only a runner needs (a mail transport).
 */
export interface Area<S extends Context.Key<any, any>, Out, E, In, RPorts, RAny, RJobs> {
  readonly name: string
  /** The area's settings (`areaSettings`), read by its config service; `configLayer` folds them. */
  readonly settings?: AnyAreaSettings
  /**
   * The provider ports this area's services need, each in its explicit `off` form (what the area answers without
   * the provider: a 503, a refusal); `providersOff` folds them, and a host merges its real adapters after it.
   */
  readonly ports?: ReadonlyArray<Layer.Layer<any, never, never>>
  /** The store ports this area owns: every store adapter family provides them (`Stores`). */
  readonly stores: ReadonlyArray<S>
  /** The area's services; they may use the services of the areas listed before it. */
  readonly services: Layer.Layer<Out, E, In>
  readonly holdings?: ReadonlyArray<Effect.Effect<HoldingCounter, never, RPorts>>
  readonly subscription?: Effect.Effect<SubscriptionCheck, never, RPorts>
  readonly addon?: Effect.Effect<AddonProvider, never, RPorts>
  readonly teardown?: ReadonlyArray<Effect.Effect<TeardownStep, never, RAny>>
  /**
   * The area's binding in each project of the node state (`nodeBinding(name, schema, of)`), for add-ons a worker
   * calls: the node state's schema and value fold every area's.
   */
  readonly node?: AnyAreaNodeBinding
  /** The handlers of the area's job kinds; one entry may answer several (kinds pinned to this replica). */
  readonly jobs?: ReadonlyArray<Effect.Effect<JobHandler | ReadonlyArray<JobHandler>, never, RJobs>>
}

/** Any area (a layer's output is contravariant, so "any output" is `never`). */
export type AnyArea = Area<any, never, any, any, any, any, any>

/** Declares an area, keeping every type it contributes. */
export const area = <
  // The stores as a tuple: inferred as an array, two unrelated ports widen to `Context.Key<any, any>`, and every
  // folded `Stores` type would be `any` (`Stores.types.test.ts` pins it).
  const Ss extends ReadonlyArray<Context.Key<any, any>> = readonly [],
  Out = never,
  E = never,
  In = never,
  RPorts = never,
  RAny = never,
  RJobs = never,
  St extends AnyAreaSettings = never,
  const Ps extends ReadonlyArray<Layer.Layer<any, never, never>> = readonly [],
  Nd extends AnyAreaNodeBinding = never
>(
  area: Omit<Area<Ss[number], Out, E, In, RPorts, RAny, RJobs>, "stores" | "settings" | "ports" | "node"> & {
    readonly stores: Ss
    readonly settings?: St
    readonly ports?: Ps
    readonly node?: Nd
  }
): Area<Ss[number], Out, E, In, RPorts, RAny, RJobs> & {
  readonly settings?: St
  readonly ports?: Ps
  readonly node?: Nd
} => area

/**
 * The provider ports a list of areas declares (`ports`), as their off forms provide them. The field's declared type
 * (layers of `any`) is intersected with each area's own tuple, so the `any` it contributes is dropped.
 */
export type ProviderPortsOf<A> = A extends { readonly ports?: infer P }
  ? P extends ReadonlyArray<infer L>
    ? L extends Layer.Layer<infer Out, any, any>
      ? 0 extends 1 & Out
        ? never
        : Out
      : never
    : never
  : never

/** Every provider port of the areas in its off form, folded from their `ports`. */
export const portsOff = <const As extends ReadonlyArray<AnyArea>>(
  areas: As
): Layer.Layer<ProviderPortsOf<As[number]>> =>
  Layer.mergeAll(
    ...(areas.flatMap((area) => area.ports ?? []) as [Layer.Layer<any>, ...Array<Layer.Layer<any>>])
  ) as Layer.Layer<ProviderPortsOf<As[number]>>

// Read from the field itself: matched against the whole `Area`, an area whose services output something fails to
// infer and `S` falls back to its constraint, `Context.Key<any, any>`, making the fold `any`.
type StoresOf<A> = A extends { readonly stores: ReadonlyArray<infer S> } ? Context.Service.Identifier<S> : never
type OutOf<A> = A extends Area<any, infer Out, any, any, any, any, any> ? Out : never
type ErrorOf<A> = A extends Area<any, never, infer E, any, any, any, any> ? E : never
type NodeNeedsOf<A> = A extends { readonly node?: infer N }
  ? N extends AreaNodeBinding<any, any, infer R>
    ? 0 extends 1 & R
      ? never
      : R
    : never
  : never
type NeedsOf<A> =
  | (A extends Area<any, never, any, infer In, infer RPorts, infer RAny, any> ? In | RPorts | RAny : never)
  | NodeNeedsOf<A>
type JobNeedsOf<A> = A extends Area<any, never, any, any, any, any, infer RJobs> ? RJobs : never

/** The services core builds beneath every area: authorization and the write envelope (ids come from the `Tokens` port). */
export type KernelServices = Mutation | Policy

/** The services folded from the areas' contributions. */
export type RegistryServices = OrgHoldings | OrgSubscriptionCheck | AddonRegistry | ProjectTeardown | Nodes

/** The store ports of a list of areas. */
export type Stores<As extends ReadonlyArray<AnyArea>> = StoresOf<As[number]>

/** Everything `services(areas)` builds. */
export type Services<As extends ReadonlyArray<AnyArea>> = KernelServices | RegistryServices | OutOf<As[number]>

/** What the host provides to `services(areas)`: the ports, `Settings` and the other outside services. */
export type Ports<As extends ReadonlyArray<AnyArea>> = Exclude<
  NeedsOf<As[number]> | Layer.Services<typeof kernel> | Exclude<Layer.Services<typeof Nodes.layer>, NodeBindings>,
  Services<As>
>

const kernel = Mutation.layer.pipe(Layer.provideMerge(Policy.layer))

/**
 * Folds a list of areas into one layer: the kernel, then the holdings, subscription check and add-on registry,
 * then each area's services in list order, then the teardown steps and the node state (`Nodes`, from the areas' node
 * bindings). Job handlers are folded by `jobHandlers`. Every contribution of every area is present at once; nothing is
 * registered by appending to an ambient value.
 */
export const services = <const As extends ReadonlyArray<AnyArea>>(
  areas: As
): Layer.Layer<Services<As>, ErrorOf<As[number]>, Ports<As>> => {
  const all = <A>(pick: (area: AnyArea) => ReadonlyArray<Effect.Effect<A, never, any>> | undefined) =>
    Effect.all(areas.flatMap((area) => pick(area) ?? []))
  const early = Layer.mergeAll(
    Layer.effect(
      OrgHoldings,
      all((area) => area.holdings)
    ),
    Layer.effect(
      OrgSubscriptionCheck,
      Effect.map(
        all((area) => (area.subscription === undefined ? [] : [area.subscription])),
        (checks): SubscriptionCheck =>
          (orgId) =>
            Effect.map(
              Effect.forEach(checks, (check) => check(orgId)),
              (answers) => answers.some((paying) => paying)
            )
      )
    ),
    Layer.effect(
      AddonRegistry,
      Effect.flatMap(
        all((area) => (area.addon === undefined ? [] : [area.addon])),
        (providers) => {
          const byName = new Map(providers.map((provider) => [provider.name, provider]))
          return byName.size === providers.length
            ? Effect.succeed(byName)
            : Effect.die(new Error("two areas register the same add-on"))
        }
      )
    )
  ).pipe(Layer.provideMerge(kernel))
  const areaServices = areas.reduce<Layer.Layer<any, any, any>>(
    (below, area) => area.services.pipe(Layer.provideMerge(below)),
    early
  )
  const late = Layer.merge(
    Layer.effect(
      ProjectTeardown,
      all((area) => area.teardown)
    ),
    Nodes.layer.pipe(
      Layer.provide(
        Layer.effect(
          NodeBindings,
          Effect.flatMap(
            Effect.forEach(
              areas.flatMap((area) => (area.node === undefined ? [] : [area.node])),
              (binding) =>
                Effect.map(
                  Effect.all({ of: binding.of, usage: binding.usage ?? Effect.succeed(undefined) }),
                  ({ of, usage }) => ({ name: binding.name, of, usage })
                )
            ),
            (bindings) =>
              new Set(bindings.map((binding) => binding.name)).size === bindings.length
                ? Effect.succeed(bindings)
                : Effect.die(new Error("two areas declare the same node binding"))
          )
        )
      )
    )
  )
  return late.pipe(Layer.provideMerge(areaServices))
}

/**
 * The handlers of every area's job kinds, for a `JobRunner`: the one place the areas' `jobs` are folded. They need
 * the services (provide `services(areas)`) and what only a runner uses, such as a `MailTransport`.
 */
export const jobHandlers = <const As extends ReadonlyArray<AnyArea>>(
  areas: As
): Layer.Layer<JobHandlers, never, JobNeedsOf<As[number]>> =>
  JobHandlers.layer(areas.flatMap((area) => area.jobs ?? []))
