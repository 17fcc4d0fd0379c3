-- PostgreSQL 15 translation of migrations/006_dashboard.sql (INTEGER -> BIGINT; no semantic difference).
-- Dashboard sign-in sessions. Only a SHA-256 hash of the session id (the cookie) is stored.
-- A key session acts as its API key (ended when the key is revoked); an operator session has key_id NULL.
CREATE TABLE dashboard_sessions (
  id_hash TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams(id),
  key_id TEXT REFERENCES api_keys(id),
  operator BIGINT NOT NULL DEFAULT 0,
  csrf TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX dashboard_sessions_key ON dashboard_sessions (key_id);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
