-- Transport security of outbound mail (issue 34). mta_sts_policies: recipient domains' MTA-STS policies (RFC 8461) as
-- last fetched over HTTPS, kept until expires_at (fetched_at + max_age) and refetched when the `_mta-sts` TXT id
-- differs from policy_id; a failed refetch keeps the row. tls_overrides: the operator's per-domain override
-- (`mta tls-policy set DOMAIN --mode enforce|opportunistic|off`), which wins over any published policy.
CREATE TABLE mta_sts_policies (
  domain TEXT PRIMARY KEY,
  policy_id TEXT NOT NULL,
  mode TEXT NOT NULL,
  mx_json TEXT NOT NULL,
  max_age INTEGER NOT NULL,
  fetched_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE TABLE tls_overrides (
  domain TEXT PRIMARY KEY,
  mode TEXT NOT NULL,
  set_at INTEGER NOT NULL
);
