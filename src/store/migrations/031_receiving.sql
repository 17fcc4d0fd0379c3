-- Receiving email at a team's domains (issue 35): `receiving` on a domain; one row per received message and team
-- (inbound_emails: the parsed reading in parsed_json, the raw message until MTA_INBOUND_RETENTION_HOURS), one row per
-- attachment with its bytes (inbound_attachments, metadata also in parsed_json). The retention pass clears raw and
-- attachment bytes and sets content_expired_at; the rows stay. Times in ms.
ALTER TABLE domains ADD COLUMN receiving INTEGER NOT NULL DEFAULT 0;
CREATE TABLE inbound_emails (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  team_id TEXT NOT NULL,
  domain_id TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  mail_from TEXT,
  rcpt_to TEXT NOT NULL,
  remote_ip TEXT,
  size INTEGER NOT NULL,
  email_id TEXT,
  parsed_json TEXT NOT NULL,
  raw BLOB,
  content_expired_at INTEGER
);
CREATE INDEX inbound_emails_team ON inbound_emails (team_id, seq);
CREATE INDEX inbound_emails_received ON inbound_emails (received_at);
CREATE TABLE inbound_attachments (
  inbound_seq INTEGER NOT NULL REFERENCES inbound_emails(seq) ON DELETE CASCADE,
  n INTEGER NOT NULL,
  content BLOB,
  PRIMARY KEY (inbound_seq, n)
);
