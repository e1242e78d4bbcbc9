import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Users, sessions, OAuth states, orgs, memberships, invites and notifications (spec 4.1, 4.2). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE users (
      id text PRIMARY KEY,
      provider text NOT NULL,
      subject text NOT NULL,
      email text,
      name text,
      created_at timestamptz NOT NULL,
      CONSTRAINT users_identity_key UNIQUE (provider, subject)
    )`
  yield* sql`
    CREATE TABLE sessions (
      token_hash text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX sessions_user_id_idx ON sessions (user_id)`
  yield* sql`
    CREATE TABLE oauth_states (
      state_hash text PRIMARY KEY,
      redirect text NOT NULL,
      code_verifier text NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE orgs (
      id text PRIMARY KEY,
      slug text NOT NULL,
      name text NOT NULL,
      plan text NOT NULL CHECK (plan IN ('free', 'pro')),
      personal boolean NOT NULL,
      created_at timestamptz NOT NULL,
      CONSTRAINT orgs_slug_key UNIQUE (slug)
    )`
  yield* sql`
    CREATE TABLE memberships (
      org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
      joined_at timestamptz NOT NULL,
      CONSTRAINT memberships_pkey PRIMARY KEY (org_id, user_id)
    )`
  yield* sql`CREATE INDEX memberships_user_id_idx ON memberships (user_id)`
  yield* sql`
    CREATE TABLE invites (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
      token_hash text NOT NULL UNIQUE,
      state text NOT NULL CHECK (state IN ('pending', 'accepted', 'revoked')),
      expires_at timestamptz NOT NULL,
      mail_id text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX invites_open_email_key ON invites (org_id, email) WHERE state = 'pending'`
  yield* sql`
    CREATE TABLE notifications (
      id text PRIMARY KEY,
      org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('limit', 'backup', 'restore')),
      message text NOT NULL,
      project_name text,
      mail_id text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX notifications_org_created_idx ON notifications (org_id, created_at DESC, id DESC)`
})
