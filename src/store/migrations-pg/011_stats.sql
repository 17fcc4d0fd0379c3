-- PostgreSQL 15 translation of migrations/011_stats.sql (INTEGER -> BIGINT, WITHOUT ROWID dropped: a PostgreSQL
-- table is a heap with a separate primary-key index either way). No semantic difference.
-- Delivery insight counters, maintained in the transaction that writes the change they count (never
-- computed by scanning emails). stats_hourly: emails reaching a status (or first opened / clicked) per
-- team, mode and UTC hour (ms of the hour's start). site_hourly: delivery attempts' outcomes per site and
-- hour (delivered, deferred, bounced), written by the delivery loop, kept for 48 hours.
CREATE TABLE stats_hourly (
  team_id TEXT NOT NULL,
  test_mode BIGINT NOT NULL,
  hour BIGINT NOT NULL,
  type TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (team_id, test_mode, hour, type)
);
CREATE TABLE site_hourly (
  hour BIGINT NOT NULL,
  site TEXT NOT NULL,
  kind TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (hour, site, kind)
);
