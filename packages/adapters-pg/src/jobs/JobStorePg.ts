import { TerminalCode } from "@hostplane/core/jobs/Job"
import { JobFeedLost, JobStore } from "@hostplane/core/jobs/JobStore"
import { Effect, Layer, Option, Queue, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { PgSession } from "../PgSession.ts"
import { NullableTimestamp, Timestamp } from "../internal/Rows.ts"

const JobRowSchema = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  key: Schema.NullOr(Schema.String),
  payload: Schema.Unknown,
  phase: Schema.String,
  terminalCode: Schema.NullOr(TerminalCode),
  attempts: Schema.Number,
  runAt: Timestamp,
  leaseOwner: Schema.NullOr(Schema.String),
  leaseUntil: NullableTimestamp,
  abortRequested: Schema.Boolean,
  lastError: Schema.NullOr(Schema.String),
  createdAt: Timestamp,
  updatedAt: Timestamp
})

/** The channel the triggers of migration jobs/0002_notify_jobs notify, with the job's kind, when work comes free. */
export const channel = "hostplane_jobs"

/** The first key of the runners' session locks (`pg_advisory_lock(int4, int4)`): "hjob". */
const lockSpace = 0x686a6f62

/**
 * The second keys (as text) of the runner identities alive now: an owner id `<key>.<uuid>` whose key is missing here
 * belongs to a process that is gone. Other stores whose rows name a runner identity (AI calls) use it too.
 */
export const liveOwnerKeys = (sql: SqlClient.SqlClient) => sql`SELECT objid::text FROM pg_locks
  WHERE locktype = 'advisory' AND classid = ${lockSpace} AND objsubid = 2 AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

/**
 * `JobStore` on PostgreSQL. Claims take due rows with `FOR UPDATE SKIP LOCKED`. Each runner holds a session advisory
 * lock `(lockSpace, n)` on the process's session (`PgSession`) for its lifetime, and its owner id starts with `n`: when
 * its process dies, PostgreSQL ends the session and drops the lock, and the next claim of any runner takes its jobs
 * without waiting for their leases to run out.
 */
export const layer: Layer.Layer<JobStore, never, SqlClient.SqlClient | PgSession> = Layer.effect(
  JobStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const session = yield* PgSession
    const columns = sql`id, kind, key, payload, phase, terminal_code, attempts, run_at, lease_owner, lease_until,
      abort_requested, last_error, created_at, updated_at`
    const liveKeys = liveOwnerKeys(sql)

    const get = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: JobRowSchema,
      execute: (id) => sql`SELECT ${columns} FROM jobs WHERE id = ${id}`
    })
    const findUnfinished = SqlSchema.findOneOption({
      Request: Schema.Struct({ kind: Schema.String, key: Schema.String }),
      Result: JobRowSchema,
      execute: ({ kind, key }) =>
        sql`SELECT ${columns} FROM jobs WHERE kind = ${kind} AND key = ${key} AND terminal_code IS NULL`
    })
    const unfinishedPinned = SqlSchema.findAll({
      Request: Schema.Struct({ kind: Schema.String, limit: Schema.Number }),
      Result: JobRowSchema,
      execute: ({ kind, limit }) =>
        sql`SELECT ${columns} FROM jobs WHERE starts_with(kind, ${kind}) AND terminal_code IS NULL
          ORDER BY created_at, id LIMIT ${limit}`
    })
    const claim = SqlSchema.findAll({
      Request: Schema.Struct({
        owner: Schema.String,
        kinds: Schema.Array(Schema.String),
        now: Schema.String,
        leaseUntil: Schema.String,
        limit: Schema.Number
      }),
      Result: JobRowSchema,
      execute: ({ owner, kinds, now, leaseUntil, limit }) => sql`
        WITH live AS MATERIALIZED (${liveKeys}), due AS (
          SELECT id, run_at AS due_at FROM jobs
          WHERE terminal_code IS NULL AND kind IN ${sql.in(kinds)} AND run_at <= ${now}::timestamptz
            AND (lease_owner IS NULL OR lease_until <= ${now}::timestamptz
              OR split_part(lease_owner, '.', 1) NOT IN (SELECT objid FROM live))
          ORDER BY run_at, id
          LIMIT ${limit}
          FOR UPDATE OF jobs SKIP LOCKED
        ), claimed AS (
          UPDATE jobs j SET lease_owner = ${owner}, lease_until = ${leaseUntil}::timestamptz, attempts = j.attempts + 1
          FROM due WHERE j.id = due.id
          RETURNING j.*, due.due_at
        )
        SELECT ${columns} FROM claimed ORDER BY due_at, id`
    })
    const claimJob = SqlSchema.findOneOption({
      Request: Schema.Struct({
        owner: Schema.String,
        id: Schema.String,
        now: Schema.String,
        leaseUntil: Schema.String
      }),
      Result: JobRowSchema,
      execute: ({ owner, id, now, leaseUntil }) => sql`
        WITH live AS MATERIALIZED (${liveKeys}), free AS (
          SELECT id FROM jobs
          WHERE id = ${id} AND terminal_code IS NULL
            AND (lease_owner IS NULL OR lease_until <= ${now}::timestamptz
              OR split_part(lease_owner, '.', 1) NOT IN (SELECT objid FROM live))
          FOR UPDATE OF jobs SKIP LOCKED
        ), claimed AS (
          UPDATE jobs j SET lease_owner = ${owner}, lease_until = ${leaseUntil}::timestamptz, attempts = j.attempts + 1
          FROM free WHERE j.id = free.id
          RETURNING j.*
        )
        SELECT ${columns} FROM claimed`
    })
    // A held job comes free at its lease's end (sooner if its runner dies: not seen here).
    const nextDue = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Schema.Struct({ dueAt: NullableTimestamp }),
      execute: (kinds) => sql`
        SELECT min(GREATEST(run_at, COALESCE(lease_until, run_at))) AS due_at FROM jobs
        WHERE terminal_code IS NULL AND kind IN ${sql.in(kinds)}`
    })
    const changed = (rows: ReadonlyArray<unknown>) => rows.length > 0

    const register = Effect.gen(function* () {
      // The lock and its release are taken in one uninterruptible step: a registration interrupted while its lock
      // statement ran would otherwise leave the lock held on the session for as long as the process lives.
      const { owner, connection } = yield* Effect.uninterruptible(
        session.use((connection) =>
          Effect.gen(function* () {
            for (;;) {
              const key = 1 + Math.floor(Math.random() * 0x7ffffffe)
              const [row] = yield* connection.queryValues("SELECT pg_try_advisory_lock($1, $2)", [lockSpace, key])
              if (row?.[0] !== true) continue
              const owner = `${key}.${crypto.randomUUID()}`
              // Closing gives the claims back at once and ends the lock.
              yield* Effect.addFinalizer(() =>
                sql`UPDATE jobs SET lease_owner = NULL, lease_until = NULL
                  WHERE lease_owner = ${owner} AND terminal_code IS NULL`.pipe(
                  Effect.andThen(connection.query("SELECT pg_advisory_unlock($1, $2)", [lockSpace, key])),
                  Effect.ignore
                )
              )
              return { owner, connection }
            }
          })
        )
      )
      return {
        owner,
        // False once the session holding the lock is gone (its connection died): the runner registers again.
        alive: connection.queryValues("SELECT 1", []).pipe(
          Effect.as(true),
          Effect.catch(() => Effect.succeed(false))
        )
      }
    }).pipe(Effect.orDie)

    return JobStore.of({
      insert: (job) =>
        sql`INSERT INTO jobs (id, kind, key, payload, phase, run_at, created_at, updated_at)
          VALUES (${job.id}, ${job.kind}, ${job.key}, ${JSON.stringify(job.payload)}::jsonb, ${job.phase},
            ${job.runAt}::timestamptz, ${job.createdAt}::timestamptz, ${job.createdAt}::timestamptz)
          ON CONFLICT DO NOTHING RETURNING id`.pipe(Effect.map(changed), Effect.orDie),
      get: (id) => get(id).pipe(Effect.orDie),
      findUnfinished: (kind, key) => findUnfinished({ kind, key }).pipe(Effect.orDie),
      unfinishedPinned: (kind, limit) =>
        limit <= 0 ? Effect.succeed([]) : unfinishedPinned({ kind: `${kind}@`, limit }).pipe(Effect.orDie),
      register,
      claim: (owner, kinds, now, leaseUntil, limit) =>
        kinds.length === 0 || limit <= 0
          ? Effect.succeed([])
          : claim({ owner, kinds, now, leaseUntil, limit }).pipe(Effect.orDie),
      watch: Effect.map(
        Effect.mapError(session.listen(channel), (cause) => new JobFeedLost({ message: cause.message })),
        (queue) => ({
          next: Queue.takeAll(queue).pipe(
            Effect.map((notes) => [...new Set(notes.map((note) => note.payload))]),
            Effect.mapError((cause) => new JobFeedLost({ message: String(cause) }))
          )
        })
      ),
      nextDue: (kinds) =>
        kinds.length === 0
          ? Effect.succeed(Option.none())
          : nextDue(kinds).pipe(
              Effect.map(([row]) => Option.fromNullishOr(row?.dueAt)),
              Effect.orDie
            ),
      claimJob: (owner, id, now, leaseUntil) => claimJob({ owner, id, now, leaseUntil }).pipe(Effect.orDie),
      renew: (owner, ids, leaseUntil) =>
        ids.length === 0
          ? Effect.succeed([])
          : sql<{ readonly id: string }>`UPDATE jobs SET lease_until = ${leaseUntil}::timestamptz
              WHERE id IN ${sql.in(ids)} AND lease_owner = ${owner} AND terminal_code IS NULL RETURNING id`.pipe(
              Effect.map((rows) => rows.map((row) => row.id)),
              Effect.orDie
            ),
      advance: (id, owner, phase, at) =>
        sql`UPDATE jobs SET phase = ${phase}, updated_at = ${at}::timestamptz
          WHERE id = ${id} AND lease_owner = ${owner} AND terminal_code IS NULL AND NOT abort_requested
          RETURNING id`.pipe(Effect.map(changed), Effect.orDie),
      finish: (id, owner, code, error, at) =>
        sql`UPDATE jobs SET terminal_code = ${code}, last_error = COALESCE(${error}, last_error),
          lease_owner = NULL, lease_until = NULL, updated_at = ${at}::timestamptz
          WHERE id = ${id} AND lease_owner = ${owner} AND terminal_code IS NULL RETURNING id`.pipe(
          Effect.map(changed),
          Effect.orDie
        ),
      reschedule: (id, owner, next, at) =>
        sql`UPDATE jobs SET phase = ${next.phase}, run_at = ${next.runAt}::timestamptz, last_error = ${next.error},
          attempts = CASE WHEN ${next.resetAttempts} THEN 0 ELSE attempts END,
          lease_owner = NULL, lease_until = NULL, updated_at = ${at}::timestamptz
          WHERE id = ${id} AND lease_owner = ${owner} AND terminal_code IS NULL RETURNING id`.pipe(
          Effect.map(changed),
          Effect.orDie
        ),
      requestAbort: (id, phases, at) =>
        phases.length === 0
          ? Effect.succeed(false)
          : sql`UPDATE jobs SET abort_requested = true, run_at = LEAST(run_at, ${at}::timestamptz),
              updated_at = ${at}::timestamptz
              WHERE id = ${id} AND terminal_code IS NULL AND phase IN ${sql.in(phases)} RETURNING id`.pipe(
              Effect.map(changed),
              Effect.orDie
            ),
      purgeFinished: (kind, before) =>
        sql`DELETE FROM jobs WHERE (kind = ${kind} OR starts_with(kind, ${`${kind}@`}))
          AND terminal_code IS NOT NULL AND updated_at < ${before}::timestamptz RETURNING id`.pipe(
          Effect.map((rows) => rows.length),
          Effect.orDie
        )
    })
  })
)
