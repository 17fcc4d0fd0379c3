-- TLS reporting (RFC 8460, issue 34; docs/outbound.md "TLS reporting"). tls_report_counts: per recipient policy domain,
-- UTC day (ms of its start), policy (type sts | tlsa | no-policy-found, and `policy`: a JSON array of its mode and mx
-- patterns, or TLSA records), result type ('' for a successful session), MX host, receiving and sending IP, how many
-- sessions; counted by the delivery loop's result writer in the transaction that records the attempts
-- (services/tls-reports.ts countTlsOutcomes). The report of a domain's day is a key range. tls_reports_sent: each
-- (domain, day) whose report went out (MTA_TLSRPT=on), so it is sent once. Both pruned by the retention job.
CREATE TABLE tls_report_counts (
  domain TEXT NOT NULL,
  day INTEGER NOT NULL,
  policy_type TEXT NOT NULL,
  policy TEXT NOT NULL,
  result_type TEXT NOT NULL,
  mx_host TEXT NOT NULL,
  receiving_ip TEXT NOT NULL,
  sending_ip TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip)
) WITHOUT ROWID;
CREATE INDEX tls_report_counts_day ON tls_report_counts (day);
CREATE TABLE tls_reports_sent (
  domain TEXT NOT NULL,
  day INTEGER NOT NULL,
  sent_at INTEGER NOT NULL,
  rua TEXT NOT NULL,
  PRIMARY KEY (domain, day)
) WITHOUT ROWID;
