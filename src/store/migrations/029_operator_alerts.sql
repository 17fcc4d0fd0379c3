-- The operator's alert outbox (MTA_ALERT_WEBHOOK_URL, services/alerts.ts): one row per ip.alert / domain.alert event,
-- written by whichever process raised it (the service's jobs, `mta ips check`, the inbound listener) and posted by the
-- primary's webhook dispatcher (webhooks/dispatcher.ts) with the webhook retry schedule. Not a team's endpoint, so not in
-- webhook_endpoints (whose rows belong to a team). next_attempt_at is non-NULL while pending (a claim moves it on).
CREATE TABLE operator_alerts (
  seq INTEGER PRIMARY KEY,
  event_id TEXT NOT NULL UNIQUE,
  payload TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  completed_at INTEGER
);
CREATE INDEX operator_alerts_due ON operator_alerts (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
