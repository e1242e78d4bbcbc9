import { AiCallStore } from "@hostplane/core/ai/AiCallStore"
import type { OrgId } from "@hostplane/core/kernel/Ids"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { transaction } from "../internal/Transaction.ts"
import { liveOwnerKeys } from "../jobs/JobStorePg.ts"

/**
 * `AiCallStore` on PostgreSQL. A start takes a transaction-scoped advisory lock on the project, so concurrent starts
 * of one project (on any replica) count one after another; a charge moves the call to `charged`, appends the ledger
 * row and moves the balance in one statement. A call's owner is a job-runner identity, alive while its session lock
 * is held (`liveOwnerKeys`), so the sweeper finds the calls of a dead process at once.
 */
export const layer = Layer.effect(
  AiCallStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const live = liveOwnerKeys(sql)
    return AiCallStore.of({
      renew: (callId, leaseUntil, outputChars) =>
        sql`UPDATE ai_calls SET lease_until = ${leaseUntil}::timestamptz, output_chars = ${outputChars}
          WHERE id = ${callId} AND state = 'pending' RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      orphans: (now, limit) =>
        sql<{
          id: string
          orgId: string
          model: string
          inputEstimate: string
          outputChars: string
        }>`WITH live AS MATERIALIZED (${live})
          SELECT id, org_id, model, input_estimate::text, output_chars::text FROM ai_calls
          WHERE state = 'pending' AND (lease_owner IS NULL OR lease_until IS NULL
            OR lease_until <= ${now}::timestamptz OR split_part(lease_owner, '.', 1) NOT IN (SELECT objid FROM live))
          ORDER BY started_at, id
          LIMIT ${limit}`.pipe(
          Effect.map((rows) =>
            rows.map((row) => ({
              id: row.id,
              orgId: row.orgId as OrgId,
              model: row.model,
              inputEstimate: Number(row.inputEstimate),
              outputChars: Number(row.outputChars)
            }))
          ),
          Effect.orDie
        ),
      start: (call) =>
        transaction(sql)(
          Effect.gen(function* () {
            yield* sql`SELECT pg_advisory_xact_lock(hashtext('ai_calls'), hashtext(${call.projectId}))`
            // Charged calls older than the window are no longer needed: the ledger keeps what they cost.
            yield* sql`DELETE FROM ai_calls WHERE project_id = ${call.projectId} AND state = 'charged'
                           AND started_at <= ${call.windowStart}::timestamptz`
            if (call.perMinute > 0) {
              const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM ai_calls
                  WHERE project_id = ${call.projectId} AND started_at > ${call.windowStart}::timestamptz`
              if (Number(rows[0]!.n) >= call.perMinute) return false
            }
            yield* sql`INSERT INTO ai_calls (id, org_id, project_id, project_name, model, state, started_at,
                  lease_owner, lease_until, input_estimate)
                VALUES (${call.id}, ${call.orgId}, ${call.projectId}, ${call.projectName}, ${call.model}, 'pending',
                  ${call.at}::timestamptz, ${call.owner}, ${call.leaseUntil}::timestamptz, ${call.inputEstimate})`
            return true
          })
        ).pipe(Effect.orDie),
      abandon: (callId) =>
        sql`DELETE FROM ai_calls WHERE id = ${callId} AND state = 'pending'`.pipe(Effect.asVoid, Effect.orDie),
      charge: (callId, charge) =>
        sql`WITH settled AS (
              UPDATE ai_calls SET state = 'charged', input_tokens = ${charge.inputTokens},
                output_tokens = ${charge.outputTokens}, cost_micro_cents = ${charge.costMicroCents}::bigint,
                charged_at = ${charge.at}::timestamptz
              WHERE id = ${callId} AND state = 'pending'
              RETURNING org_id, project_name, model
            ), row AS (
              INSERT INTO ai_ledger (org_id, kind, amount_micro_cents, project_name, model, created_at)
              SELECT org_id, 'call', -${charge.costMicroCents}::bigint, project_name, model, ${charge.at}::timestamptz
              FROM settled
              RETURNING org_id, amount_micro_cents
            )
            INSERT INTO ai_credit (org_id, balance_micro_cents, updated_at)
            SELECT org_id, amount_micro_cents, ${charge.at}::timestamptz FROM row
            ON CONFLICT (org_id) DO UPDATE SET
              balance_micro_cents = ai_credit.balance_micro_cents + EXCLUDED.balance_micro_cents,
              updated_at = EXCLUDED.updated_at
            RETURNING balance_micro_cents::text AS balance`.pipe(
          Effect.map((rows) =>
            Option.map(Option.fromNullishOr(rows[0] as { balance: string } | undefined), (row) => Number(row.balance))
          ),
          Effect.orDie
        )
    })
  })
)
