import type { Layer } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { apiId, apiPrefix } from "@hostplane/api/Api"

export { apiId, apiPrefix }

/**
 * The API of one area's groups exactly as the root API serves them (same id, same prefix): an area builds its
 * handlers against it, so handler modules never import the root API that folds them.
 */
export const areaApi = <const Groups extends NonEmptyReadonlyArray<HttpApiGroup.Constraint>>(...groups: Groups) =>
  HttpApi.make(apiId)
    .add(...groups)
    .prefix(apiPrefix)

/** What one area contributes to `/v1`: its groups, the layer of their handlers, and the spec's rows it serves. */
export interface AreaHttp<Groups extends NonEmptyReadonlyArray<HttpApiGroup.Constraint>, Out, E, In> {
  readonly name: string
  readonly groups: Groups
  readonly handlers: Layer.Layer<Out, E, In>
  /** The spec's routes of this area, spelled as the spec spells them (`GET /v1/orgs/{orgSlug}`): the route pin. */
  readonly routes: ReadonlyArray<string>
}

/** Any area (a layer's output is contravariant, so "any output" is `never`). */
export type AnyAreaHttp = AreaHttp<NonEmptyReadonlyArray<HttpApiGroup.Constraint>, never, any, any>

export const areaHttp = <const Groups extends NonEmptyReadonlyArray<HttpApiGroup.Constraint>, Out, E, In>(
  area: AreaHttp<Groups, Out, E, In>
): AreaHttp<Groups, Out, E, In> => area

export type GroupsOf<A> = A extends AreaHttp<infer Groups, never, any, any> ? Groups[number] : never
export type HandlersOf<A> = A extends AreaHttp<any, never, any, any> ? A["handlers"] : never
