-- Statistics by provider (GET /v1/stats/sites, decisions.md "Statistics by provider"): per team, mode, UTC hour
-- (ms of its start), site (as `mta sites` names it) and figure, counted by the transition writer in the transaction
-- that writes the recipient's change (services/stats.ts countSiteChanges). `type` is a figure (sent, delivered,
-- delivery_delayed, bounced, complained, deferrals, attempts) or `d<k>`, a bucket of the accept-to-delivered time
-- histogram (services/stats.ts DELAY_BUCKETS), from which the median is read without scanning emails.
-- domain_sites: the site each recipient domain was last delivered to by the delivery loop, so a complaint or late
-- bounce arriving later (feedback) is counted at the site of the recipient's domain without a DNS lookup.
CREATE TABLE site_stats_hourly (
  team_id TEXT NOT NULL,
  test_mode INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  site TEXT NOT NULL,
  type TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (team_id, test_mode, hour, site, type)
) WITHOUT ROWID;
CREATE TABLE domain_sites (
  domain TEXT PRIMARY KEY,
  site TEXT NOT NULL,
  seen_at INTEGER NOT NULL
) WITHOUT ROWID;
