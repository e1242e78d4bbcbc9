import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"

/** One numbered migration file: `NNNN_verb_noun` (numbers are global across areas) and its effect. */
export type Migrations = Readonly<Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>>>

/** What one area contributes on PostgreSQL: its store layer(s) and the migration files that belong to it. */
export interface AreaPg<Out, E, In> {
  readonly name: string
  readonly stores: Layer.Layer<Out, E, In>
  readonly migrations: Migrations
}

/** Any area (a layer's output is contravariant, so "any output" is `never`). */
export type AnyAreaPg = AreaPg<never, any, any>

export const areaPg = <Out, E, In>(area: AreaPg<Out, E, In>): AreaPg<Out, E, In> => area

type OutOf<A> = A extends AreaPg<infer Out, any, any> ? Out : never
type ErrorOf<A> = A extends AreaPg<never, infer E, any> ? E : never
type InOf<A> = A extends AreaPg<never, any, infer In> ? In : never

/** Every store layer of the areas on one `SqlClient`. */
export const storesOf = <const As extends ReadonlyArray<AnyAreaPg>>(
  areas: As
): Layer.Layer<OutOf<As[number]>, ErrorOf<As[number]>, InOf<As[number]>> =>
  Layer.mergeAll(...(areas.map((area) => area.stores) as [AnyAreaPg["stores"], ...Array<AnyAreaPg["stores"]>])) as any

/** Every area's migrations in one record sorted by id; an id claimed by two areas is a defect. */
export const migrationsOf = (areas: ReadonlyArray<AnyAreaPg>): Migrations => {
  const entries = areas.flatMap((area) => Object.entries(area.migrations))
  const ids = new Set(entries.map(([id]) => id.slice(0, 4)))
  if (ids.size !== entries.length) throw new Error("two migrations share an id")
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)))
}
