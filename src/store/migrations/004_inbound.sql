-- Reports received by the inbound SMTP listener (DSNs, complaints, anything else). Every report is
-- kept with what it did; `raw` (capped) is kept only for those that changed nothing, for the operator.
CREATE TABLE inbound_reports (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL CHECK (kind IN ('dsn', 'arf', 'other')),
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
CREATE INDEX inbound_reports_created ON inbound_reports (created_at);
CREATE INDEX inbound_reports_email ON inbound_reports (email_seq) WHERE email_seq IS NOT NULL;
CREATE INDEX inbound_reports_message ON inbound_reports (report_message_id) WHERE report_message_id IS NOT NULL;
CREATE INDEX inbound_reports_outcome ON inbound_reports (outcome, seq);
