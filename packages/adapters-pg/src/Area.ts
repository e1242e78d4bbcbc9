import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * An area's migrations by file name, `NNNN_verb_noun`, numbered 0001, 0002... within the area (its id is
 * `<area>/<name>`, so areas never compete for a number); a shipped one is never edited, only followed.
 */
export type Migrations = Readonly<Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>>>

/**
 * What one area contributes on PostgreSQL: its store layer(s), the migration files that belong to it, and its
 * provider adapters that run on PostgreSQL themselves (read from `SERVICE_*`, as the standalone server runs them).
 */
export interface AreaPg<Out, E, In> {
  readonly name: string
  readonly stores: Layer.Layer<Out, E, In>
  readonly migrations: Migrations
  readonly providers?: Layer.Layer<any, any, any>
}

/** Any area (a layer's output is contravariant, so "any output" is `never`). */
export type AnyAreaPg = AreaPg<never, any, any>

export const areaPg = <Out, E, In, P extends Layer.Layer<any, any, any> = never>(
  area: Omit<AreaPg<Out, E, In>, "providers"> & { readonly providers?: P }
): AreaPg<Out, E, In> & { readonly providers?: P } => area

type OutOf<A> = A extends AreaPg<infer Out, any, any> ? Out : never
type ErrorOf<A> = A extends AreaPg<never, infer E, any> ? E : never
type InOf<A> = A extends AreaPg<never, any, infer In> ? In : never

/** Every store layer of the areas on one `SqlClient`. */
export const storesOf = <const As extends ReadonlyArray<AnyAreaPg>>(
  areas: As
): Layer.Layer<OutOf<As[number]>, ErrorOf<As[number]>, InOf<As[number]>> =>
  Layer.mergeAll(...(areas.map((area) => area.stores) as [AnyAreaPg["stores"], ...Array<AnyAreaPg["stores"]>])) as any

// Read from the field itself, as core's `ProviderPortsOf` does: the declared `any` layer contributes nothing.
type ProvidersOf<A> = A extends { readonly providers?: infer P }
  ? P extends Layer.Layer<any, any, any>
    ? P
    : never
  : never
type Known<X> = 0 extends 1 & X ? never : X

/** Every PostgreSQL-level provider adapter of the areas, from the environment. */
export const providersOf = <const As extends ReadonlyArray<AnyAreaPg>>(
  areas: As
): Layer.Layer<
  Known<Layer.Success<ProvidersOf<As[number]>>>,
  Known<Layer.Error<ProvidersOf<As[number]>>>,
  Known<Layer.Services<ProvidersOf<As[number]>>>
> =>
  Layer.mergeAll(
    ...(areas.flatMap((area) => area.providers ?? []) as [Layer.Layer<any>, ...Array<Layer.Layer<any>>])
  ) as any
