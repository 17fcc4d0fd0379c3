-- Core schema: teams, keys, emails with one delivery row per recipient, events, credits,
-- idempotency records, suppressions, domains. Times are integer milliseconds since the epoch.
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE teams (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams(id),
  name TEXT,
  mode TEXT NOT NULL CHECK (mode IN ('test', 'live')),
  scopes TEXT NOT NULL,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at INTEGER
);
CREATE INDEX api_keys_team ON api_keys (team_id, created_at);

CREATE TABLE domains (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams(id),
  name TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failed')),
  created_at INTEGER NOT NULL,
  last_checked_at INTEGER,
  UNIQUE (team_id, name)
);
CREATE INDEX domains_name ON domains (name);

CREATE TABLE emails (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  team_id TEXT NOT NULL REFERENCES teams(id),
  test_mode INTEGER NOT NULL,
  status TEXT NOT NULL,
  from_addr TEXT NOT NULL,
  to_json TEXT NOT NULL,
  cc_json TEXT,
  bcc_json TEXT,
  reply_to TEXT,
  subject TEXT NOT NULL,
  html TEXT,
  text TEXT,
  tags_json TEXT,
  headers_json TEXT,
  tracking_opens INTEGER NOT NULL DEFAULT 0,
  tracking_clicks INTEGER NOT NULL DEFAULT 0,
  scheduled_at INTEGER,
  credits_charged INTEGER NOT NULL,
  sender_domain TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX emails_team ON emails (team_id, seq);
CREATE INDEX emails_team_status ON emails (team_id, status, seq);
CREATE INDEX emails_team_mode ON emails (team_id, test_mode, seq);

CREATE TABLE email_tags (
  team_id TEXT NOT NULL,
  tag TEXT NOT NULL,
  email_seq INTEGER NOT NULL,
  PRIMARY KEY (team_id, tag, email_seq)
) WITHOUT ROWID;

-- One row per recipient. next_attempt_at is set while work remains (queued, deferred, or
-- claimed under a lease: claiming moves it to the lease's end), NULL once final.
CREATE TABLE deliveries (
  id INTEGER PRIMARY KEY,
  email_seq INTEGER NOT NULL REFERENCES emails(seq),
  recipient TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('to', 'cc', 'bcc')),
  domain TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  first_attempt_at INTEGER,
  last_reply TEXT,
  reason TEXT,
  updated_at INTEGER NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX deliveries_email ON deliveries (email_seq);
CREATE INDEX deliveries_recipient ON deliveries (recipient);

CREATE TABLE events (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  team_id TEXT NOT NULL,
  email_seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  recipient TEXT,
  data_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX events_email ON events (email_seq, seq);

CREATE TABLE credit_grants (
  id TEXT PRIMARY KEY,
  team_id TEXT NOT NULL REFERENCES teams(id),
  amount INTEGER NOT NULL,
  remaining INTEGER NOT NULL,
  usd REAL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX credit_grants_team ON credit_grants (team_id, expires_at);

CREATE TABLE free_usage (
  team_id TEXT NOT NULL,
  month TEXT NOT NULL,
  used INTEGER NOT NULL,
  PRIMARY KEY (team_id, month)
) WITHOUT ROWID;

-- Every charge (negative) and refund (positive), naming the grant (NULL = free allowance).
CREATE TABLE credit_ledger (
  id INTEGER PRIMARY KEY,
  team_id TEXT NOT NULL,
  email_seq INTEGER,
  grant_id TEXT,
  month TEXT,
  amount INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX credit_ledger_email ON credit_ledger (email_seq);

CREATE TABLE idempotency (
  team_id TEXT NOT NULL,
  key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status INTEGER NOT NULL,
  response_json TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (team_id, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_created ON idempotency (created_at);

CREATE TABLE suppressions (
  seq INTEGER PRIMARY KEY,
  team_id TEXT NOT NULL,
  address TEXT NOT NULL,
  reason TEXT NOT NULL CHECK (reason IN ('hard_bounce', 'complaint', 'manual')),
  email_id TEXT,
  created_at INTEGER NOT NULL,
  UNIQUE (team_id, address)
);
