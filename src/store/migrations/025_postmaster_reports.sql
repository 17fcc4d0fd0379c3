-- Mail to postmaster@ and abuse@ (RFC 5321 §4.5.1) is kept as an inbound report of kind 'postmaster'. SQLite cannot
-- change a CHECK in place: the table is rebuilt with the same columns and indexes.
CREATE TABLE inbound_reports_025 (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL CHECK (kind IN ('dsn', 'arf', 'other', 'postmaster')),
  outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'duplicate', 'ignored', 'unmatched')),
  team_id TEXT,
  email_seq INTEGER,
  email_id TEXT,
  matched_by TEXT,
  report_message_id TEXT,
  mail_from TEXT,
  rcpt_to TEXT NOT NULL,
  remote_ip TEXT,
  parsed_json TEXT NOT NULL,
  raw_size INTEGER NOT NULL,
  raw BLOB,
  raw_truncated INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
INSERT INTO inbound_reports_025 SELECT seq, id, kind, outcome, team_id, email_seq, email_id, matched_by,
  report_message_id, mail_from, rcpt_to, remote_ip, parsed_json, raw_size, raw, raw_truncated, created_at
  FROM inbound_reports;
DROP TABLE inbound_reports;
ALTER TABLE inbound_reports_025 RENAME TO inbound_reports;
CREATE INDEX inbound_reports_created ON inbound_reports (created_at);
CREATE INDEX inbound_reports_email ON inbound_reports (email_seq) WHERE email_seq IS NOT NULL;
CREATE INDEX inbound_reports_message ON inbound_reports (report_message_id) WHERE report_message_id IS NOT NULL;
CREATE INDEX inbound_reports_outcome ON inbound_reports (outcome, seq);
