import { apiOfGroups } from "@hostplane/api/Api"
import type { NonEmptyReadonlyArray } from "effect/Array"
import type { AnyAreaHttp, GroupsOf } from "./Area.ts"

export { Api, ApiWithDevAuth } from "@hostplane/api/Api"

/** The `/v1` API of a list of areas: every area's groups, in list order, fully typed. */
export const apiOf = <const As extends NonEmptyReadonlyArray<AnyAreaHttp>>(areas: As) =>
  apiOfGroups(areas.flatMap((area) => area.groups) as unknown as NonEmptyReadonlyArray<GroupsOf<As[number]>>)
