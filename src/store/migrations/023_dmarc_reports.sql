-- DMARC aggregate reports (issue 33): one row per (reporting organisation, report id), for the team domain the
-- report's policy_published/domain names (a report for no team's domain is not stored); one row per <record>,
-- whose count is the number of messages it stands for. Both are read by domain and time (the summary of
-- GET /v1/domains/{id}/dmarc sums the records of the reports whose range starts in the window), and deleted with
-- the domain. Times in ms (begin_at/end_at: the report's date_range). An unreadable report is kept in
-- inbound_reports instead (kind 'other', parsed_json.dmarc.error).
CREATE TABLE dmarc_reports (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  team_id TEXT NOT NULL,
  domain_id TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  domain TEXT NOT NULL,
  org_name TEXT NOT NULL,
  email TEXT,
  report_id TEXT NOT NULL,
  begin_at INTEGER NOT NULL,
  end_at INTEGER NOT NULL,
  records INTEGER NOT NULL,
  messages INTEGER NOT NULL,
  schema TEXT NOT NULL,
  generator TEXT,
  policy_json TEXT NOT NULL,
  errors_json TEXT,
  remote_ip TEXT,
  received_at INTEGER NOT NULL,
  UNIQUE (org_name, report_id)
);
CREATE INDEX dmarc_reports_domain ON dmarc_reports (domain_id, begin_at);
CREATE TABLE dmarc_records (
  seq INTEGER PRIMARY KEY,
  report_seq INTEGER NOT NULL REFERENCES dmarc_reports(seq) ON DELETE CASCADE,
  source_ip TEXT NOT NULL,
  count INTEGER NOT NULL,
  disposition TEXT,
  dkim_aligned INTEGER NOT NULL,
  spf_aligned INTEGER NOT NULL,
  dmarc_pass INTEGER NOT NULL,
  header_from TEXT,
  envelope_from TEXT,
  auth_json TEXT NOT NULL
);
CREATE INDEX dmarc_records_report ON dmarc_records (report_seq);
