import { Context, type Effect, type Option, Schema, type Scope } from "effect"
import type { ZoneTaken } from "../errors/Errors.ts"
import type { OrgId } from "../kernel/Ids.ts"
import type { DnssecState, RrsetRow, ZoneContents, ZoneKey, ZoneRow } from "./Zone.ts"

/** The name server lost its change feed (a dropped connection): it subscribes again and reloads every zone. */
export class ZoneFeedLost extends Schema.TaggedError<ZoneFeedLost>()("ZoneFeedLost", { message: Schema.String }) {}

/** A subscription to zone changes; `next` waits for at least one and answers every zone name changed since. */
export interface ZoneFeed {
  readonly next: Effect.Effect<ReadonlyArray<string>, ZoneFeedLost>
}

/**
 * DNS zones (spec 4.14) and their rrsets. A zone name is unique across all orgs. Every write names the zone it
 * changed to the subscribers of `watch` once its transaction commits, so name servers reload only that zone.
 */
export class ZoneStore extends Context.Service<
  ZoneStore,
  {
    readonly find: (name: string) => Effect.Effect<Option.Option<ZoneRow>>
    readonly listByOrg: (orgId: OrgId) => Effect.Effect<ReadonlyArray<ZoneRow>>
    /**
     * Inside a transaction: waits for, and holds until it ends, the one lock of every zone related to `name` (they
     * share its last two labels), so two organizations cannot create a parent and a child zone at once.
     */
    readonly lockTree: (name: string) => Effect.Effect<void>
    /** Zones equal to `name`, above it or below it (`example.com` for `a.example.com`, and the reverse). */
    readonly related: (name: string) => Effect.Effect<ReadonlyArray<ZoneRow>>
    /** Inserts a zone; a taken name fails with `ZoneTaken`. */
    readonly insert: (row: ZoneRow) => Effect.Effect<void, ZoneTaken>
    /** Removes the zone and its rrsets. */
    readonly remove: (name: string) => Effect.Effect<void>
    /** The zone's stored rrsets by name (canonical order) and type. */
    readonly rrsets: (zone: string) => Effect.Effect<ReadonlyArray<RrsetRow>>
    /** Replaces (or creates) the rrset of `row.name` and `row.type`. */
    readonly putRrset: (zone: string, row: RrsetRow) => Effect.Effect<void>
    /** False when the zone holds no such rrset. */
    readonly removeRrset: (zone: string, name: string, type: string) => Effect.Effect<boolean>
    /**
     * Raises the serial to the larger of `serial + 1` and `at` in seconds since 1970 (so a zone made again keeps
     * rising for secondaries) and answers the zone as it now stands.
     */
    readonly touch: (name: string, at: string) => Effect.Effect<ZoneRow>
    /** Sets the DNSSEC state, key and recorded DS list; the serial is left to `touch`. */
    readonly setDnssec: (
      name: string,
      dnssec: { readonly state: DnssecState; readonly key: ZoneKey | null; readonly dsRecorded: ReadonlyArray<string> }
    ) => Effect.Effect<void>
    /** One zone with its rrsets, as committed; none when it is gone. */
    readonly contents: (name: string) => Effect.Effect<Option.Option<ZoneContents>>
    /** Every zone with its rrsets, as committed. */
    readonly all: Effect.Effect<ReadonlyArray<ZoneContents>>
    /** Subscribes to changes; changes committed after this answers are seen by `next`. */
    readonly watch: Effect.Effect<ZoneFeed, ZoneFeedLost, Scope.Scope>
  }
>()("@hostplane/core/dns/ZoneStore") {}
