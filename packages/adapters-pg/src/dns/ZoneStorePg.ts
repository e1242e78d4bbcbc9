import { PgClient } from "@effect/sql-pg"
import { PgSession } from "../PgSession.ts"
import { DnssecState, type RrsetRow, type ZoneContents, type ZoneRow } from "@hostplane/core/dns/Zone"
import { ZoneFeedLost, ZoneStore } from "@hostplane/core/dns/ZoneStore"
import { ZoneTaken } from "@hostplane/core/errors/Errors"
import { OrgId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option, Queue, Schema } from "effect"
import { SqlSchema } from "effect/sql"
import { onUniqueViolation, Timestamp } from "../internal/Rows.ts"

/** The channel every zone write notifies (payload: the zone name) when its transaction commits. */
export const channel = "hostplane_dns_zones"

const ZoneRowSchema = Schema.Struct({
  name: Schema.String,
  orgId: OrgId,
  serial: Schema.Number,
  dnssec: DnssecState,
  keyId: Schema.NullOr(Schema.String),
  keyCiphertext: Schema.NullOr(Schema.String),
  publicKey: Schema.NullOr(Schema.String),
  keyTag: Schema.NullOr(Schema.Number),
  ds: Schema.NullOr(Schema.String),
  dsRecorded: Schema.Array(Schema.String),
  createdAt: Timestamp
})

const RrsetRowSchema = Schema.Struct({
  zone: Schema.String,
  name: Schema.String,
  type: Schema.String,
  ttl: Schema.Number,
  records: Schema.Array(Schema.String),
  managed: Schema.Boolean
})

const toZone = (row: typeof ZoneRowSchema.Type): ZoneRow => ({
  name: row.name,
  orgId: row.orgId,
  serial: row.serial,
  dnssec: row.dnssec,
  key:
    row.keyId === null || row.keyCiphertext === null || row.publicKey === null || row.keyTag === null || row.ds === null
      ? null
      : {
          sealed: { keyId: row.keyId, ciphertext: row.keyCiphertext },
          publicKey: row.publicKey,
          keyTag: row.keyTag,
          ds: row.ds
        },
  dsRecorded: row.dsRecorded,
  createdAt: row.createdAt
})

const toRrset = ({ name, type, ttl, records, managed }: typeof RrsetRowSchema.Type): RrsetRow =>
  managed ? { name, type, ttl, records, managed } : { name, type, ttl, records }

/** `ZoneStore` on PostgreSQL; changes reach every server through `LISTEN`/`NOTIFY` on `channel`. */
export const layer = Layer.effect(
  ZoneStore,
  Effect.gen(function* () {
    const sql = yield* PgClient.PgClient
    const session = yield* PgSession
    const columns = sql`name, org_id, serial::float8 AS serial, dnssec, key_id, key_ciphertext, public_key, key_tag,
      ds, ds_recorded, created_at`
    const rrsetColumns = sql`zone, name, type, ttl, records, managed`
    const notify = (zone: string) => sql`SELECT pg_notify(${channel}, ${zone})`.pipe(Effect.asVoid)

    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: ZoneRowSchema,
      execute: (name) => sql`SELECT ${columns} FROM dns_zones WHERE name = ${name}`
    })
    const listByOrg = SqlSchema.findAll({
      Request: Schema.String,
      Result: ZoneRowSchema,
      execute: (orgId) => sql`SELECT ${columns} FROM dns_zones WHERE org_id = ${orgId} ORDER BY name COLLATE "C"`
    })
    const related = SqlSchema.findAll({
      Request: Schema.String,
      Result: ZoneRowSchema,
      execute: (name) => sql`SELECT ${columns} FROM dns_zones WHERE name = ${name}
        OR right(${name}, length(name) + 1) = '.' || name OR right(name, length(${name}) + 1) = '.' || ${name}`
    })
    const allZones = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ZoneRowSchema,
      execute: () => sql`SELECT ${columns} FROM dns_zones`
    })
    const rrsets = SqlSchema.findAll({
      Request: Schema.String,
      Result: RrsetRowSchema,
      execute: (zone) =>
        sql`SELECT ${rrsetColumns} FROM dns_rrsets WHERE zone = ${zone} ORDER BY name COLLATE "C", type COLLATE "C"`
    })
    const allRrsets = SqlSchema.findAll({
      Request: Schema.Void,
      Result: RrsetRowSchema,
      execute: () => sql`SELECT ${rrsetColumns} FROM dns_rrsets ORDER BY zone, name COLLATE "C", type COLLATE "C"`
    })

    const touch = (name: string, at: string) =>
      sql`UPDATE dns_zones SET serial = GREATEST(serial + 1, floor(extract(epoch FROM ${at}::timestamptz))::bigint)
        WHERE name = ${name}`.pipe(
        Effect.andThen(notify(name)),
        Effect.andThen(find(name)),
        Effect.map((row) => toZone(Option.getOrThrow(row))),
        Effect.orDie
      )

    return ZoneStore.of({
      find: (name) => find(name).pipe(Effect.map(Option.map(toZone)), Effect.orDie),
      listByOrg: (orgId) =>
        listByOrg(orgId).pipe(
          Effect.map((rows) => rows.map(toZone)),
          Effect.orDie
        ),
      lockTree: (name) =>
        sql`SELECT pg_advisory_xact_lock(hashtext('dns_zone_tree'), hashtext(${name.split(".").slice(-2).join(".")}))`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      related: (name) =>
        related(name).pipe(
          Effect.map((rows) => rows.map(toZone)),
          Effect.orDie
        ),
      insert: (row) =>
        sql`INSERT INTO dns_zones (name, org_id, serial, dnssec, created_at)
          VALUES (${row.name}, ${row.orgId}, ${row.serial}, ${row.dnssec}, ${row.createdAt}::timestamptz)`.pipe(
          Effect.andThen(notify(row.name)),
          Effect.as(false),
          onUniqueViolation(sql, "dns_zones_pkey", () => true),
          Effect.orDie,
          Effect.flatMap((taken) =>
            taken ? Effect.fail(new ZoneTaken({ message: `the zone ${row.name} is already in use` })) : Effect.void
          )
        ),
      remove: (name) =>
        sql`DELETE FROM dns_zones WHERE name = ${name}`.pipe(Effect.andThen(notify(name)), Effect.asVoid, Effect.orDie),
      rrsets: (zone) =>
        rrsets(zone).pipe(
          Effect.map((rows) => rows.map(toRrset)),
          Effect.orDie
        ),
      putRrset: (zone, row) =>
        sql`INSERT INTO dns_rrsets (zone, name, type, ttl, records, managed)
          VALUES (${zone}, ${row.name}, ${row.type}, ${row.ttl}, ${JSON.stringify(row.records)}::jsonb,
            ${row.managed === true})
          ON CONFLICT (zone, name, type) DO UPDATE
          SET ttl = EXCLUDED.ttl, records = EXCLUDED.records, managed = EXCLUDED.managed`.pipe(
          Effect.andThen(notify(zone)),
          Effect.asVoid,
          Effect.orDie
        ),
      removeRrset: (zone, name, type) =>
        sql`DELETE FROM dns_rrsets WHERE zone = ${zone} AND name = ${name} AND type = ${type} RETURNING name`.pipe(
          Effect.tap(() => notify(zone)),
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      touch,
      setDnssec: (name, { state, key, dsRecorded }) =>
        sql`UPDATE dns_zones SET dnssec = ${state}, key_id = ${key?.sealed.keyId ?? null},
          key_ciphertext = ${key?.sealed.ciphertext ?? null}, public_key = ${key?.publicKey ?? null},
          key_tag = ${key?.keyTag ?? null}, ds = ${key?.ds ?? null}, ds_recorded = ${JSON.stringify(dsRecorded)}::jsonb
          WHERE name = ${name}`.pipe(Effect.andThen(notify(name)), Effect.asVoid, Effect.orDie),
      contents: (name) =>
        Effect.gen(function* () {
          const zone = yield* find(name)
          if (Option.isNone(zone)) return Option.none<ZoneContents>()
          const rows = yield* rrsets(name)
          return Option.some({ zone: toZone(zone.value), rrsets: rows.map(toRrset) })
        }).pipe(Effect.orDie),
      all: Effect.gen(function* () {
        const zones = yield* allZones(undefined)
        const rows = yield* allRrsets(undefined)
        const byZone = new Map<string, Array<RrsetRow>>()
        for (const row of rows) {
          const list = byZone.get(row.zone) ?? []
          list.push(toRrset(row))
          byZone.set(row.zone, list)
        }
        return zones.map((zone) => ({ zone: toZone(zone), rrsets: byZone.get(zone.name) ?? [] }))
      }).pipe(Effect.orDie),
      watch: Effect.map(
        Effect.mapError(session.listen(channel), (cause) => new ZoneFeedLost({ message: cause.message })),
        (queue) => ({
          next: Queue.takeAll(queue).pipe(
            Effect.map((notes) => notes.map((note) => note.payload)),
            Effect.mapError((cause) => new ZoneFeedLost({ message: String(cause) }))
          )
        })
      )
    })
  })
)
