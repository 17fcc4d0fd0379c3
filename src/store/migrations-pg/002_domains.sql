-- PostgreSQL 15 translation of migrations/002_domains.sql (INTEGER -> BIGINT; no semantic difference).
-- Sending domains: the DKIM key pair (private key never leaves the store), the return-path
-- name that routes bounces to us, and the last result of each record's check.
ALTER TABLE domains ADD COLUMN dkim_selector TEXT NOT NULL DEFAULT '';
ALTER TABLE domains ADD COLUMN dkim_algorithm TEXT NOT NULL DEFAULT 'rsa';
ALTER TABLE domains ADD COLUMN dkim_private_key TEXT NOT NULL DEFAULT '';
ALTER TABLE domains ADD COLUMN dkim_public_key TEXT NOT NULL DEFAULT '';
ALTER TABLE domains ADD COLUMN return_path TEXT;
ALTER TABLE domains ADD COLUMN return_path_verified BIGINT NOT NULL DEFAULT 0;
ALTER TABLE domains ADD COLUMN records_json TEXT;
ALTER TABLE domains ADD COLUMN last_error TEXT;
CREATE INDEX domains_team ON domains (team_id, created_at);
