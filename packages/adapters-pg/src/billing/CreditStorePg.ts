import { CreditStore } from "@hostplane/core/ai/CreditStore"
import { zeroCredit } from "@hostplane/core/ai/Credit"
import { LedgerKind } from "@hostplane/core/ai/Credit"
import { OrgId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Timestamp } from "../internal/Rows.ts"

// `bigint` columns are read as text by the driver; amounts stay far below 2^53 micro-cents (90 million USD).
const Amount = Schema.NumberFromString
const NullableAmount = Schema.NullOr(Schema.NumberFromString)

const CreditRowSchema = Schema.Struct({
  orgId: OrgId,
  balanceMicroCents: Amount,
  hasPaymentMethod: Schema.Boolean,
  autotopupEnabled: Schema.Boolean,
  autotopupAmountMicroCents: NullableAmount,
  autotopupThresholdMicroCents: NullableAmount,
  autotopupDay: Schema.NullOr(Schema.String),
  autotopupsOnDay: Schema.Number
})

const LedgerRowSchema = Schema.Struct({
  ledgerId: Amount,
  kind: LedgerKind,
  amountMicroCents: Amount,
  projectName: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  createdAt: Timestamp
})

/** `CreditStore` on PostgreSQL: a ledger row and the balance move in one statement, so they never disagree. */
export const layer = Layer.effect(
  CreditStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const find = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: CreditRowSchema,
      execute: (orgId) =>
        sql`SELECT org_id, balance_micro_cents::text, has_payment_method, autotopup_enabled,
              autotopup_amount_micro_cents::text, autotopup_threshold_micro_cents::text,
              to_char(autotopup_day, 'YYYY-MM-DD') AS autotopup_day, autotopups_on_day
            FROM ai_credit WHERE org_id = ${orgId}`
    })

    // Ordered by the table's bigint column: a bare `ledger_id` here would name the output column, its ::text, and
    // sort 9 above 59.
    const ledger = SqlSchema.findAll({
      Request: Schema.Struct({ orgId: Schema.String, limit: Schema.Number, before: Schema.NullOr(Schema.Number) }),
      Result: LedgerRowSchema,
      execute: ({ orgId, limit, before }) =>
        sql`SELECT ledger_id::text, kind, amount_micro_cents::text, project_name, model, created_at
            FROM ai_ledger
            WHERE org_id = ${orgId} AND (${before}::bigint IS NULL OR ledger_id < ${before}::bigint)
            ORDER BY ai_ledger.ledger_id DESC LIMIT ${limit}`
    })

    return CreditStore.of({
      find: (orgId) =>
        find(orgId).pipe(
          Effect.map(
            Option.match({
              onNone: () => zeroCredit(orgId),
              onSome: (row) => ({
                orgId: row.orgId,
                balanceMicroCents: row.balanceMicroCents,
                hasPaymentMethod: row.hasPaymentMethod,
                autoTopup: {
                  enabled: row.autotopupEnabled,
                  amountMicroCents: row.autotopupAmountMicroCents,
                  thresholdMicroCents: row.autotopupThresholdMicroCents
                },
                autoTopupDay: row.autotopupDay,
                autoTopupsOnDay: row.autotopupsOnDay
              })
            })
          ),
          Effect.orDie
        ),
      append: (entry) =>
        sql`WITH row AS (
              INSERT INTO ai_ledger (org_id, kind, amount_micro_cents, project_name, model, created_at)
              VALUES (${entry.orgId}, ${entry.kind}, ${entry.amountMicroCents}::bigint, ${entry.projectName},
                ${entry.model}, ${entry.at}::timestamptz)
              RETURNING org_id, amount_micro_cents
            )
            INSERT INTO ai_credit (org_id, balance_micro_cents, updated_at)
            SELECT org_id, amount_micro_cents, ${entry.at}::timestamptz FROM row
            ON CONFLICT (org_id) DO UPDATE SET
              balance_micro_cents = ai_credit.balance_micro_cents + EXCLUDED.balance_micro_cents,
              updated_at = EXCLUDED.updated_at
            RETURNING balance_micro_cents::text AS balance`.pipe(
          Effect.map((rows) => Number((rows[0] as { balance: string }).balance)),
          Effect.orDie
        ),
      setPaymentMethod: (orgId, at) =>
        sql`INSERT INTO ai_credit (org_id, has_payment_method, updated_at) VALUES (${orgId}, true, ${at}::timestamptz)
            ON CONFLICT (org_id) DO UPDATE SET has_payment_method = true, updated_at = EXCLUDED.updated_at`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      setAutoTopup: (orgId, autoTopup, at) =>
        sql`INSERT INTO ai_credit (org_id, autotopup_enabled, autotopup_amount_micro_cents,
              autotopup_threshold_micro_cents, updated_at)
            VALUES (${orgId}, ${autoTopup.enabled}, ${autoTopup.amountMicroCents}::bigint,
              ${autoTopup.thresholdMicroCents}::bigint, ${at}::timestamptz)
            ON CONFLICT (org_id) DO UPDATE SET
              autotopup_enabled = EXCLUDED.autotopup_enabled,
              autotopup_amount_micro_cents = EXCLUDED.autotopup_amount_micro_cents,
              autotopup_threshold_micro_cents = EXCLUDED.autotopup_threshold_micro_cents,
              updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid, Effect.orDie),
      // One conditional upsert: the row lock serialises concurrent claims, so the day's count never passes `perDay`.
      claimAutoTopup: (orgId, day, perDay, at) =>
        sql`INSERT INTO ai_credit (org_id, autotopup_day, autotopups_on_day, updated_at)
            VALUES (${orgId}, ${day}::date, 1, ${at}::timestamptz)
            ON CONFLICT (org_id) DO UPDATE SET
              autotopups_on_day = CASE WHEN ai_credit.autotopup_day = EXCLUDED.autotopup_day
                THEN ai_credit.autotopups_on_day + 1 ELSE 1 END,
              autotopup_day = EXCLUDED.autotopup_day,
              updated_at = EXCLUDED.updated_at
            WHERE ai_credit.autotopup_day IS DISTINCT FROM EXCLUDED.autotopup_day
              OR ai_credit.autotopups_on_day < ${perDay}
            RETURNING org_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      spentSince: (orgId, since) =>
        sql`SELECT (-COALESCE(sum(amount_micro_cents), 0))::text AS spent FROM ai_ledger
            WHERE org_id = ${orgId} AND kind = 'call' AND created_at >= ${since}::timestamptz`.pipe(
          Effect.map((rows) => Number((rows[0] as { spent: string }).spent)),
          Effect.orDie
        ),
      ledger: (orgId, limit, before) =>
        ledger({ orgId, limit, before: before ?? null }).pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              ledger_id: row.ledgerId,
              kind: row.kind,
              amountMicroCents: row.amountMicroCents,
              projectName: row.projectName,
              model: row.model,
              createdAt: row.createdAt
            }))
          ),
          Effect.orDie
        )
    })
  })
)
