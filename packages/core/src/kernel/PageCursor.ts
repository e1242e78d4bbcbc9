import { Option, Result, Schema } from "effect"
import { Base64Url } from "effect/encoding"

/** The default and largest page of every paged list (decisions.md part 1). */
export const defaultPageSize = 50
export const maxPageSize = 200

/** Query `limit` of every paged list: an integer 1..200 as text; anything else is 400, never clamped or a 500. */
export const PageLimit = Schema.FiniteFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: maxPageSize })
)

/** The query of a paged list: `limit` (`PageLimit`) and the `cursor` its previous page answered as `nextCursor`. */
export const PageQuery = { limit: Schema.optionalKey(PageLimit), cursor: Schema.optionalKey(Schema.String) }

/** Clamps a requested page size to 1..200, 50 when absent. */
export const pageSize = (limit: number | undefined): number =>
  limit === undefined ? defaultPageSize : Math.min(Math.max(Math.trunc(limit), 1), maxPageSize)

/** Where a newest-first page ends: its last row's time (RFC 3339 UTC, milliseconds) and id, the tie-breaker. */
export interface PagePosition {
  readonly createdAt: string
  readonly id: string
}

/** The opaque `nextCursor` of a newest-first page: its last row's position, base64url JSON `[createdAt, id]`. */
export const encodePageCursor = (row: PagePosition): string => Base64Url.encode(JSON.stringify([row.createdAt, row.id]))

/**
 * A cursor a list of ids with `idPrefix` returned; anything else (not base64url JSON of a canonical time and an id of
 * that kind) is none, which the list answers 400.
 */
export const decodePageCursor = (cursor: string, idPrefix: string): Option.Option<PagePosition> => {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return Option.none()
  const text = Base64Url.decodeString(cursor)
  if (Result.isFailure(text)) return Option.none()
  try {
    const parsed: unknown = JSON.parse(text.success)
    if (!Array.isArray(parsed) || parsed.length !== 2) return Option.none()
    const [createdAt, id] = parsed as [unknown, unknown]
    if (typeof createdAt !== "string" || typeof id !== "string") return Option.none()
    if (!id.startsWith(`${idPrefix}_`) || !/^[A-Za-z0-9_]{1,100}$/.test(id.slice(idPrefix.length + 1))) {
      return Option.none()
    }
    const time = Date.parse(createdAt)
    if (Number.isNaN(time) || new Date(time).toISOString() !== createdAt) return Option.none()
    return Option.some({ createdAt, id })
  } catch {
    return Option.none()
  }
}
