-- PostgreSQL 15 translation of migrations/027_site_stats.sql (INTEGER -> BIGINT, WITHOUT ROWID dropped), plus the
-- per-transaction delta table the store appends to (store/stats.ts bumpSiteStat), folded at COMMIT in key order by
-- a deferred constraint trigger, as stats_hourly's are (014, 017, 020): concurrent result writers never wait on a
-- counter row's lock for the rest of their transaction, and never lock two rows in opposite orders.
-- Statistics by provider (GET /v1/stats/sites, decisions.md "Statistics by provider"): per team, mode, UTC hour
-- (ms of its start), site (as `mta sites` names it) and figure, counted by the transition writer in the transaction
-- that writes the recipient's change (services/stats.ts countSiteChanges). `type` is a figure (sent, delivered,
-- delivery_delayed, bounced, complained, deferrals, attempts) or `d<k>`, a bucket of the accept-to-delivered time
-- histogram (services/stats.ts DELAY_BUCKETS), from which the median is read without scanning emails.
-- domain_sites: the site each recipient domain was last delivered to by the delivery loop, so a complaint or late
-- bounce arriving later (feedback) is counted at the site of the recipient's domain without a DNS lookup.
CREATE TABLE site_stats_hourly (
  team_id TEXT NOT NULL,
  test_mode BIGINT NOT NULL,
  hour BIGINT NOT NULL,
  site TEXT NOT NULL,
  type TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (team_id, test_mode, hour, site, type)
);
CREATE TABLE domain_sites (
  domain TEXT PRIMARY KEY,
  site TEXT NOT NULL,
  seen_at BIGINT NOT NULL
);
CREATE UNLOGGED TABLE site_stats_hourly_delta (
  xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
  team_id TEXT NOT NULL,
  test_mode BIGINT NOT NULL,
  hour BIGINT NOT NULL,
  site TEXT NOT NULL,
  type TEXT NOT NULL,
  n BIGINT NOT NULL
);
CREATE INDEX site_stats_hourly_delta_xact ON site_stats_hourly_delta (xact);

CREATE FUNCTION site_stats_fold() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  r record;
BEGIN
  -- Called once per delta row at COMMIT: the first call folds them all, the others return at once.
  IF current_setting('mta.site_stats_folded', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('mta.site_stats_folded', 'on', true);
  FOR r IN
    WITH d AS (DELETE FROM site_stats_hourly_delta WHERE xact = pg_current_xact_id() RETURNING *)
    SELECT team_id, test_mode, hour, site, type, sum(n) AS n FROM d GROUP BY team_id, test_mode, hour, site, type
    ORDER BY team_id, test_mode, hour, site, type
  LOOP
    INSERT INTO site_stats_hourly AS t (team_id, test_mode, hour, site, type, n)
    VALUES (r.team_id, r.test_mode, r.hour, r.site, r.type, r.n)
    ON CONFLICT (team_id, test_mode, hour, site, type) DO UPDATE SET n = t.n + excluded.n;
  END LOOP;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER site_stats_hourly_fold AFTER INSERT ON site_stats_hourly_delta DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION site_stats_fold();
