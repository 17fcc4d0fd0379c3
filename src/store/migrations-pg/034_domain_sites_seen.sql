-- Retention of statistics (services/retention.ts): domain_sites rows not written for DOMAIN_SITE_KEEP_DAYS go, read
-- from the head of this index in batches. (stats_hourly and site_stats_hourly are pruned per team and mode, a range
-- of their primary keys.)
CREATE INDEX domain_sites_seen ON domain_sites (seen_at);
