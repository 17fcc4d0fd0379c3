-- Delivery insight counters, maintained in the transaction that writes the change they count (never
-- computed by scanning emails). stats_hourly: emails reaching a status (or first opened / clicked) per
-- team, mode and UTC hour (ms of the hour's start). site_hourly: delivery attempts' outcomes per site and
-- hour (delivered, deferred, bounced), written by the delivery loop, kept for 48 hours.
CREATE TABLE stats_hourly (
  team_id TEXT NOT NULL,
  test_mode INTEGER NOT NULL,
  hour INTEGER NOT NULL,
  type TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (team_id, test_mode, hour, type)
) WITHOUT ROWID;
CREATE TABLE site_hourly (
  hour INTEGER NOT NULL,
  site TEXT NOT NULL,
  kind TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour, site, kind)
) WITHOUT ROWID;
