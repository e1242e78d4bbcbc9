import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Every raise of the node revision notifies `hostplane_revision` when its transaction commits, so a replica reads the
 * changes when they happen instead of polling for them. The payload is empty: PostgreSQL sends one notification per
 * transaction however many raises it made, and the reader reads the stamps anyway. A trigger, so no writer can forget.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION hostplane_revision_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('hostplane_revision', '');
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER node_revision_notify AFTER UPDATE ON node_revision
    FOR EACH ROW EXECUTE FUNCTION hostplane_revision_notify()`
})
