import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Every change an authenticated request's cache depends on notifies `hostplane_auth` when its transaction commits
 * so every replica's auth cache drops what changed: a user's profile, sessions, access tokens (not their `last_used_at`) and memberships as `u:<user id>`, an
 * org's name, plan or deletion as `o:<org id>`. Triggers, so no writer can forget one.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION hostplane_auth_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_TABLE_NAME = 'users' THEN
        PERFORM pg_notify('hostplane_auth', 'u:' || OLD.id);
      ELSIF TG_TABLE_NAME = 'orgs' THEN
        PERFORM pg_notify('hostplane_auth', 'o:' || OLD.id);
      ELSE
        IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('hostplane_auth', 'u:' || OLD.user_id); END IF;
        IF TG_OP <> 'DELETE' THEN PERFORM pg_notify('hostplane_auth', 'u:' || NEW.user_id); END IF;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER users_auth_notify AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION hostplane_auth_notify()`
  yield* sql`
    CREATE TRIGGER sessions_auth_notify AFTER UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION hostplane_auth_notify()`
  yield* sql`
    CREATE TRIGGER memberships_auth_notify AFTER INSERT OR UPDATE OR DELETE ON memberships
    FOR EACH ROW EXECUTE FUNCTION hostplane_auth_notify()`
  yield* sql`
    CREATE TRIGGER orgs_auth_notify AFTER UPDATE OR DELETE ON orgs
    FOR EACH ROW EXECUTE FUNCTION hostplane_auth_notify()`
  yield* sql`
    CREATE TRIGGER access_tokens_auth_notify AFTER DELETE ON access_tokens
    FOR EACH ROW EXECUTE FUNCTION hostplane_auth_notify()`
  yield* sql`
    CREATE TRIGGER access_tokens_auth_notify_update AFTER UPDATE ON access_tokens
    FOR EACH ROW WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
      OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION hostplane_auth_notify()`
})
