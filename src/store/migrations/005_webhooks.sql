-- Webhook endpoints per team, the durable outbox (one row per endpoint and event, written in the
-- same transaction as the event) and the log of every delivery attempt. Times are ms since epoch.
CREATE TABLE webhook_endpoints (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  team_id TEXT NOT NULL REFERENCES teams(id),
  url TEXT NOT NULL,
  events TEXT NOT NULL,                 -- space-separated event kinds
  secret TEXT NOT NULL,                 -- whsec_…: needed to sign, never logged or listed
  old_secret TEXT,                      -- previous secret after a rotation, signs alongside until…
  old_secret_expires_at INTEGER,        -- …this time (rotation + 24 h)
  enabled INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,
  disabled_at INTEGER,
  failing_since INTEGER,                -- first failed attempt since the last success
  consecutive_failed INTEGER NOT NULL DEFAULT 0, -- deliveries ended failed since the last success
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team_id, seq);

-- next_attempt_at is non-NULL while the delivery is pending (claiming moves it to the lease's end).
CREATE TABLE webhook_deliveries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  endpoint_seq INTEGER NOT NULL REFERENCES webhook_endpoints(seq) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_status_code INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  completed_at INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_seq, seq);
CREATE INDEX webhook_deliveries_completed ON webhook_deliveries (completed_at) WHERE completed_at IS NOT NULL;

CREATE TABLE webhook_attempts (
  seq INTEGER PRIMARY KEY,
  delivery_seq INTEGER NOT NULL REFERENCES webhook_deliveries(seq) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  status_code INTEGER,
  response_snippet TEXT,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  next_retry_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_seq, seq);
