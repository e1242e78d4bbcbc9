import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The write envelope's lock and its reads in one round trip, since every writer of an org waits while the lock is held: the org row's `FOR UPDATE`, then the org, the
 * user's membership and the project read in a statement of their own. A volatile function's statements each take a
 * fresh snapshot, so the reads see what the lock's previous holder committed (a project's delete, a demotion), as two
 * statements from the client would; one join under `FOR UPDATE` would not. Whole rows, so new columns need no change.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION hostplane_envelope_lock(p_org text, p_user text, p_project text)
    RETURNS TABLE (org orgs, role text, project projects) LANGUAGE plpgsql VOLATILE AS $$
    #variable_conflict use_column
    BEGIN
      PERFORM 1 FROM orgs o WHERE o.id = p_org FOR UPDATE;
      RETURN QUERY
        SELECT o, m.role, p
        FROM orgs o
        LEFT JOIN memberships m ON m.org_id = o.id AND m.user_id = p_user
        LEFT JOIN projects p ON p.id = p_project
        WHERE o.id = p_org;
    END $$`
})
