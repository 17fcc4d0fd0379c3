-- PostgreSQL 15 translation of migrations/028_ip_health.sql (INTEGER -> BIGINT).
-- Sending-IP health (operations.md "Deliverability insight"): the last check of each sending IP (services/ip-health.ts),
-- read by `mta ips`, GET /admin/v1/ips and the dashboard without checking again. listings_json: [{zone, listed,
-- answer}]; spf_missing_json: [domain names]; hold_reason: `dnsbl:<zone>` while MTA_DNSBL_ACTION=suspend keeps the IP
-- suspended on every site (the delivery loop reads it), NULL otherwise.
-- ip_alerts: when each ip.alert subject (IP, alert, zone) was last announced, so each is sent once per 7 days.
CREATE TABLE ip_health (
  ip TEXT PRIMARY KEY,
  pool TEXT NOT NULL,
  reverse_dns TEXT,
  fcrdns BIGINT NOT NULL,
  listings_json TEXT NOT NULL,
  spf_missing_json TEXT NOT NULL,
  state TEXT NOT NULL,
  hold_reason TEXT,
  checked_at BIGINT NOT NULL
);
CREATE TABLE ip_alerts (
  subject TEXT PRIMARY KEY,
  sent_at BIGINT NOT NULL
);
