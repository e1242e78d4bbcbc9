import { Layer } from "effect"

/**
 * What one area's provider adapters are on a standalone server: the layer that reads their `SERVICE_*` settings and
 * builds each port (its real adapter, or the adapter's own answer when the settings are absent). The area's off
 * forms stay in core (`Area.ports`); a host folds these instead, or merges some of them after the off forms.
 */
export interface AreaProviders<Out, E, In> {
  /** The core area whose ports these are. */
  readonly name: string
  readonly fromEnv: Layer.Layer<Out, E, In>
}

/** Any area's providers (a layer's output is contravariant, so "any output" is `never`). */
export type AnyAreaProviders = AreaProviders<never, any, any>

/** Declares an area's providers, keeping their types. */
export const areaProviders = <Out, E, In>(area: AreaProviders<Out, E, In>): AreaProviders<Out, E, In> => area

type OutOf<A> = A extends AreaProviders<infer Out, any, any> ? Out : never
type ErrorOf<A> = A extends AreaProviders<never, infer E, any> ? E : never
type InOf<A> = A extends AreaProviders<never, any, infer In> ? In : never

/**
 * Every provider of the areas from the environment, in one layer. An adapter named by two areas is one value, so one
 * build shares it (the mail transport of the relay and of the job runner).
 */
export const providersOf = <const As extends ReadonlyArray<AnyAreaProviders>>(
  areas: As
): Layer.Layer<OutOf<As[number]>, ErrorOf<As[number]>, InOf<As[number]>> =>
  Layer.mergeAll(
    ...(areas.map((area) => area.fromEnv) as [AnyAreaProviders["fromEnv"], ...Array<AnyAreaProviders["fromEnv"]>])
  ) as any
