import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Deployment records (spec 4.3); the bundles themselves live in the artifact store, by digest. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE deployments (
      id text PRIMARY KEY,
      project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      version integer NOT NULL,
      digest text NOT NULL,
      bytes bigint NOT NULL,
      files integer NOT NULL,
      created_at timestamptz NOT NULL,
      uploaded_by text NOT NULL,
      manifest jsonb NOT NULL,
      git jsonb,
      CONSTRAINT deployments_project_version_key UNIQUE (project_id, version)
    )`
})
