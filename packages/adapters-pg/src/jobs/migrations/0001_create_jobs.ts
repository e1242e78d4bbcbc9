import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * One durable jobs engine (`jobs`) instead of three claim columns: the operations become jobs (an operation is a job
 * whose payload names its org and project, so `operations` goes), queued mail gets a `mail_send` job and pending
 * hostnames a `hostname_check` job. The areas keep their own rows: `mail_outbox` the message and its outcome,
 * `hostnames` the name and its verification; when and how often they are tried moves to `jobs`.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE jobs (
      id text PRIMARY KEY,
      kind text NOT NULL,
      key text,
      payload jsonb NOT NULL,
      phase text NOT NULL,
      terminal_code text CHECK (terminal_code IN ('done', 'aborted', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      run_at timestamptz NOT NULL,
      lease_owner text,
      lease_until timestamptz,
      abort_requested boolean NOT NULL DEFAULT false,
      last_error text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX jobs_kind_key_idx ON jobs (kind, key) WHERE terminal_code IS NULL AND key IS NOT NULL`
  yield* sql`CREATE INDEX jobs_due_idx ON jobs (run_at) WHERE terminal_code IS NULL`
  yield* sql`
    INSERT INTO jobs (id, kind, key, payload, phase, terminal_code, attempts, run_at, last_error, created_at, updated_at)
    SELECT id, CASE kind WHEN 'project.delete' THEN 'project_delete' ELSE kind END, project_id,
      jsonb_build_object('orgId', org_id, 'projectId', project_id), phase, terminal_code, attempts, next_run_at,
      last_error, created_at, updated_at
    FROM operations`
  yield* sql`DROP TABLE operations`
  yield* sql`
    INSERT INTO jobs (id, kind, payload, phase, attempts, run_at, last_error, created_at, updated_at)
    SELECT id, 'mail_send', jsonb_build_object('mailId', id), 'send', attempts, next_attempt_at, last_error,
      created_at, created_at
    FROM mail_outbox WHERE state = 'queued'`
  yield* sql`ALTER TABLE mail_outbox DROP COLUMN attempts, DROP COLUMN next_attempt_at`
  yield* sql`
    INSERT INTO jobs (id, kind, payload, phase, run_at, created_at, updated_at)
    SELECT 'job_' || md5(name || ':' || verify_token), 'hostname_check',
      jsonb_build_object('name', name, 'verifyToken', verify_token), 'check', next_check_at, created_at, created_at
    FROM hostnames WHERE status = 'pending_dns' AND verify_token IS NOT NULL`
  yield* sql`ALTER TABLE hostnames DROP COLUMN next_check_at`
})
