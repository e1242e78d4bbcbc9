import type { Stores } from "@hostplane/core"
import { Layer } from "effect"
import { MemoryState } from "./memory/MemoryState.ts"

/** One port contract run against an adapter family's stores; `name` prefixes the suite (`memory`, `postgres`). */
export type ContractSuite = <E>(name: string, stores: Layer.Layer<Stores, E>) => void

/** What one area contributes to the testkit: its memory store layer(s) on the shared state, its contract suites. */
export interface AreaMemory<Out, E> {
  readonly name: string
  readonly stores: Layer.Layer<Out, E, MemoryState>
  readonly suites: ReadonlyArray<ContractSuite>
}

/** Any area (a layer's output is contravariant, so "any output" is `never`). */
export type AnyAreaMemory = AreaMemory<never, any>

export const areaMemory = <Out, E>(area: AreaMemory<Out, E>): AreaMemory<Out, E> => area

type OutOf<A> = A extends AreaMemory<infer Out, any> ? Out : never
type ErrorOf<A> = A extends AreaMemory<never, infer E> ? E : never

/** Every memory store of the areas on one fresh state. */
export const storesOf = <const As extends ReadonlyArray<AnyAreaMemory>>(
  areas: As
): Layer.Layer<OutOf<As[number]>, ErrorOf<As[number]>> =>
  Layer.mergeAll(
    ...(areas.map((area) => area.stores) as [AnyAreaMemory["stores"], ...Array<AnyAreaMemory["stores"]>])
  ).pipe(Layer.provide(MemoryState.layer)) as any

/** Every area's contract suites against one adapter family. */
export const suitesOf =
  (areas: ReadonlyArray<AnyAreaMemory>) =>
  <E>(name: string, stores: Layer.Layer<Stores, E>): void => {
    for (const area of areas) for (const suite of area.suites) suite(name, stores)
  }
