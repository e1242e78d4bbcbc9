import { DomainSource, DomainStatus } from "@hostplane/core/domains/Domain"
import type { DomainRow } from "@hostplane/core/domains/Domain"
import { DomainStore } from "@hostplane/core/domains/DomainStore"
import { OrgId, UserId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"

const Purchase = Schema.Struct({
  years: Schema.Number,
  priceCents: Schema.NullOr(Schema.Number),
  registered: Schema.Boolean,
  actorId: UserId
})

const Row = Schema.Struct({
  name: Schema.String,
  orgId: OrgId,
  status: DomainStatus,
  source: DomainSource,
  expiresAt: NullableTimestamp,
  autoRenew: Schema.Boolean,
  locked: Schema.Boolean,
  nameservers: Schema.Array(Schema.String),
  createdAt: Timestamp,
  purchase: Schema.NullOr(Purchase),
  contactKeyId: Schema.NullOr(Schema.String),
  contactCiphertext: Schema.NullOr(Schema.String)
})

const toDomain = (row: typeof Row.Type): DomainRow => ({
  name: row.name,
  orgId: row.orgId,
  status: row.status,
  source: row.source,
  expiresAt: row.expiresAt,
  autoRenew: row.autoRenew,
  locked: row.locked,
  nameservers: row.nameservers,
  createdAt: row.createdAt,
  purchase:
    row.purchase === null
      ? null
      : {
          ...row.purchase,
          contact:
            row.contactKeyId === null || row.contactCiphertext === null
              ? null
              : { keyId: row.contactKeyId, ciphertext: row.contactCiphertext }
        }
})

/** `DomainStore` on PostgreSQL: the name is the primary key, so two orgs never hold one name. */
export const layer = Layer.effect(
  DomainStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`name, org_id, status, source, expires_at, auto_renew, locked, nameservers, created_at, purchase,
      contact_key_id, contact_ciphertext`
    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Row,
      execute: (name) => sql`SELECT ${columns} FROM domains WHERE name = ${name}`
    })
    const list = SqlSchema.findAll({
      Request: Schema.String,
      Result: Row,
      execute: (orgId) => sql`SELECT ${columns} FROM domains WHERE org_id = ${orgId} ORDER BY name COLLATE "C"`
    })
    const listRegistered = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () =>
        sql`SELECT ${columns} FROM domains WHERE source = 'purchase' AND status <> 'registering'
          ORDER BY name COLLATE "C"`
    })
    const values = (row: DomainRow) => {
      const { contact, ...purchase } = row.purchase ?? { contact: null }
      return {
        name: row.name,
        orgId: row.orgId,
        status: row.status,
        source: row.source,
        expiresAt: row.expiresAt,
        autoRenew: row.autoRenew,
        locked: row.locked,
        nameservers: JSON.stringify(row.nameservers),
        createdAt: row.createdAt,
        purchase: row.purchase === null ? null : JSON.stringify(purchase),
        contactKeyId: contact?.keyId ?? null,
        contactCiphertext: contact?.ciphertext ?? null
      }
    }
    return DomainStore.of({
      find: (name) =>
        find(name).pipe(
          Effect.map((row) => row.pipe(Option.map(toDomain))),
          Effect.orDie
        ),
      list: (orgId) =>
        list(orgId).pipe(
          Effect.map((rows) => rows.map(toDomain)),
          Effect.orDie
        ),
      listRegistered: listRegistered(undefined).pipe(
        Effect.map((rows) => rows.map(toDomain)),
        Effect.orDie
      ),
      insert: (row) => {
        const v = values(row)
        return sql`INSERT INTO domains (name, org_id, status, source, expires_at, auto_renew, locked, nameservers,
            created_at, purchase, contact_key_id, contact_ciphertext)
          VALUES (${v.name}, ${v.orgId}, ${v.status}, ${v.source}, ${v.expiresAt}::timestamptz, ${v.autoRenew},
            ${v.locked}, ${v.nameservers}::jsonb, ${v.createdAt}::timestamptz, ${v.purchase}::jsonb, ${v.contactKeyId},
            ${v.contactCiphertext})
          ON CONFLICT (name) DO NOTHING RETURNING name`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
      },
      save: (row) => {
        const v = values(row)
        return sql`UPDATE domains SET org_id = ${v.orgId}, status = ${v.status}, source = ${v.source},
            expires_at = ${v.expiresAt}::timestamptz, auto_renew = ${v.autoRenew}, locked = ${v.locked},
            nameservers = ${v.nameservers}::jsonb, created_at = ${v.createdAt}::timestamptz, purchase = ${v.purchase}::jsonb,
            contact_key_id = ${v.contactKeyId}, contact_ciphertext = ${v.contactCiphertext}
          WHERE name = ${v.name} RETURNING name`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
      },
      remove: (name) =>
        sql`DELETE FROM domains WHERE name = ${name} RETURNING name`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    })
  })
)
