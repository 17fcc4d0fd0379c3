-- Delivery control (operations.md "Delivery control"): per (source IP, site) reaction state and today's
-- warm-up count written by the delivery loop; per-site figures for `mta sites`; operator commands the
-- CLI writes and the loop applies within a second; warming IPs. ip '*' is an operator hold of a whole site.
CREATE TABLE delivery_lanes (
  ip TEXT NOT NULL,
  site TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'open',
  until INTEGER,
  reason TEXT,
  rate REAL,
  blocklisted INTEGER NOT NULL DEFAULT 0,
  day INTEGER NOT NULL DEFAULT -1,
  sent_today INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (site, ip)
);
CREATE TABLE delivery_sites (
  site TEXT PRIMARY KEY,
  mx_json TEXT NOT NULL,
  queued INTEGER NOT NULL DEFAULT 0,
  in_flight INTEGER NOT NULL DEFAULT 0,
  sent_last_hour INTEGER NOT NULL DEFAULT 0,
  domains_json TEXT NOT NULL DEFAULT '[]',
  updated_at INTEGER NOT NULL
);
CREATE TABLE delivery_commands (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  site TEXT NOT NULL,
  ip TEXT,
  seconds INTEGER,
  reason TEXT,
  created_at INTEGER NOT NULL,
  applied_at INTEGER
);
CREATE TABLE ip_warmups (
  ip TEXT PRIMARY KEY,
  started_at INTEGER NOT NULL,
  start_day INTEGER NOT NULL
);
