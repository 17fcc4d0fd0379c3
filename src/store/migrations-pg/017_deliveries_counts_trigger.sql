-- PostgreSQL only (SQLite's 017 changes nothing). Two changes to the counters' upkeep (014, 015), same counts:
-- 1. The seven counter triggers on deliveries become one row trigger without a WHEN clause, computing the same
--    deltas in its body.
-- 2. The per-transaction delta tables are keyed by transaction (xid8, filled in by default) instead of by backend
--    process, so the COMMIT-time fold finds its own rows only.
-- Why: PostgreSQL rebuilds a row trigger's WHEN clause for every statement that fires it (it reads the stored
-- expression, and plans it, inlining queue_slot(): a parse of that SQL function's body), and the store's
-- statements touch one row each; with seven triggers that was most of the cost of an INSERT or a result UPDATE of a
-- delivery (perf on the backend under the API bench: expression_planner, stringToNode and the SQL parser ~12% of
-- its CPU; docs/postgres-notes.md). One plpgsql call per row now decides in its body, and reads the email's team and
-- sender domain once instead of once per delta.
-- The deltas are those of 014/015: queue_counts (recipients, held, deferred) when a recipient enters or leaves
-- the waiting states, or is held, released or first attempted while waiting; queue_slots when its slot (NULL when
-- final, held or leased, else the minute of its next attempt) or, while in a slot, its attempted flag changes.
-- A delta of zero is not written (the fold skipped those). deliveries.email_seq and .domain never change
-- (deliveries_key_fixed), nor emails.team_id and .sender_domain (emails_key_fixed).
-- Why 2: a node's connection folds `WHERE pid = pg_backend_pid()`, and the dead delta rows of all its earlier
-- transactions carry the same pid until vacuum reaches them; the fold's bitmap scans went through all of them
-- (15,000 index entries and 175 heap pages per fold after 10 s of the API bench: 250-300 µs a table, 4 tables per
-- COMMIT). A transaction's own id matches its own rows only. The deltas never outlive their transaction, so the
-- tables are empty whenever a migration runs; every node runs the same migrations (they refuse a store ahead of
-- them), so no node still writes `pid`.
ALTER TABLE queue_counts_delta DROP COLUMN pid, ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE queue_slots_delta DROP COLUMN pid, ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE stats_hourly_delta DROP COLUMN pid, ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE site_hourly_delta DROP COLUMN pid, ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX queue_counts_delta_xact ON queue_counts_delta (xact);
CREATE INDEX queue_slots_delta_xact ON queue_slots_delta (xact);
CREATE INDEX stats_hourly_delta_xact ON stats_hourly_delta (xact);
CREATE INDEX site_hourly_delta_xact ON site_hourly_delta (xact);

DROP TRIGGER queue_counts_insert ON deliveries;
DROP TRIGGER queue_counts_update ON deliveries;
DROP TRIGGER queue_counts_leave ON deliveries;
DROP TRIGGER queue_counts_delete ON deliveries;
DROP TRIGGER queue_slots_insert ON deliveries;
DROP TRIGGER queue_slots_update ON deliveries;
DROP TRIGGER queue_slots_delete ON deliveries;

CREATE FUNCTION deliveries_counts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  w0 int := 0; h0 int := 0; a0 int := 0; s0 bigint;
  w1 int := 0; h1 int := 0; a1 int := 0; s1 bigint;
  dr int; dh int; dd int;
  moved boolean;
  eseq bigint;
  dom text;
  team text;
  sender text;
BEGIN
  IF TG_OP <> 'INSERT' THEN
    w0 := (OLD.status IN ('queued', 'sent', 'delivery_delayed'))::int;
    h0 := (OLD.held_at IS NOT NULL)::int;
    a0 := (OLD.attempts > 0)::int;
    IF w0 = 1 AND OLD.held_at IS NULL AND OLD.leased_until IS NULL THEN
      s0 := coalesce(OLD.next_attempt_at, 0) / 60000;
    END IF;
    eseq := OLD.email_seq;
    dom := OLD.domain;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    w1 := (NEW.status IN ('queued', 'sent', 'delivery_delayed'))::int;
    h1 := (NEW.held_at IS NOT NULL)::int;
    a1 := (NEW.attempts > 0)::int;
    IF w1 = 1 AND NEW.held_at IS NULL AND NEW.leased_until IS NULL THEN
      s1 := coalesce(NEW.next_attempt_at, 0) / 60000;
    END IF;
    eseq := NEW.email_seq;
    dom := NEW.domain;
  END IF;
  dr := w1 - w0;
  dh := w1 * h1 - w0 * h0;
  dd := w1 * (1 - h1) * a1 - w0 * (1 - h0) * a0;
  moved := s0 IS DISTINCT FROM s1 OR (s0 IS NOT NULL AND a0 <> a1);
  IF dr = 0 AND dh = 0 AND dd = 0 AND NOT moved THEN
    RETURN NULL;
  END IF;
  SELECT e.team_id, e.sender_domain INTO team, sender FROM emails e WHERE e.seq = eseq;
  IF NOT FOUND THEN
    RETURN NULL; -- impossible under the foreign key; 014's INSERT … SELECT wrote nothing either
  END IF;
  IF dr <> 0 OR dh <> 0 OR dd <> 0 THEN
    INSERT INTO queue_counts_delta (team_id, domain, sender_domain, recipients, held, deferred)
    VALUES (team, dom, sender, dr, dh, dd);
  END IF;
  IF moved AND s0 IS NOT NULL THEN
    INSERT INTO queue_slots_delta (slot, team_id, domain, sender_domain, attempted, recipients)
    VALUES (s0, team, dom, sender, a0, -1);
  END IF;
  IF moved AND s1 IS NOT NULL THEN
    INSERT INTO queue_slots_delta (slot, team_id, domain, sender_domain, attempted, recipients)
    VALUES (s1, team, dom, sender, a1, 1);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER deliveries_counts AFTER INSERT OR UPDATE OR DELETE ON deliveries
FOR EACH ROW EXECUTE FUNCTION deliveries_counts();

-- 014's fold, each delta table read by this transaction's id.
CREATE OR REPLACE FUNCTION counters_fold() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  -- Called once per delta row at COMMIT: the first call folds them all, the others return at once.
  IF current_setting('mta.counters_folded', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('mta.counters_folded', 'on', true);
  FOR r IN
    WITH d AS (DELETE FROM queue_counts_delta WHERE xact = pg_current_xact_id() RETURNING *)
    SELECT team_id, domain, sender_domain, sum(recipients) AS rc, sum(held) AS h, sum(deferred) AS df
    FROM d GROUP BY team_id, domain, sender_domain ORDER BY team_id, domain, sender_domain
  LOOP
    CONTINUE WHEN r.rc = 0 AND r.h = 0 AND r.df = 0;
    INSERT INTO queue_counts AS q (team_id, domain, sender_domain, recipients, held, deferred)
    VALUES (r.team_id, r.domain, r.sender_domain, r.rc, r.h, r.df)
    ON CONFLICT (team_id, domain, sender_domain) DO UPDATE SET recipients = q.recipients + excluded.recipients,
      held = q.held + excluded.held, deferred = q.deferred + excluded.deferred;
    DELETE FROM queue_counts q WHERE q.recipients <= 0 AND q.team_id = r.team_id AND q.domain = r.domain
      AND q.sender_domain = r.sender_domain;
  END LOOP;
  FOR r IN
    WITH d AS (DELETE FROM queue_slots_delta WHERE xact = pg_current_xact_id() RETURNING *)
    SELECT slot, team_id, domain, sender_domain, attempted, sum(recipients) AS rc
    FROM d GROUP BY slot, team_id, domain, sender_domain, attempted
    ORDER BY slot, team_id, domain, sender_domain, attempted
  LOOP
    CONTINUE WHEN r.rc = 0;
    INSERT INTO queue_slots AS q (slot, team_id, domain, sender_domain, attempted, recipients)
    VALUES (r.slot, r.team_id, r.domain, r.sender_domain, r.attempted, r.rc)
    ON CONFLICT (slot, team_id, domain, sender_domain, attempted) DO UPDATE SET recipients = q.recipients + excluded.recipients;
    DELETE FROM queue_slots q WHERE q.recipients <= 0 AND q.slot = r.slot AND q.team_id = r.team_id
      AND q.domain = r.domain AND q.sender_domain = r.sender_domain AND q.attempted = r.attempted;
  END LOOP;
  FOR r IN
    WITH d AS (DELETE FROM stats_hourly_delta WHERE xact = pg_current_xact_id() RETURNING *)
    SELECT team_id, test_mode, hour, type, sum(n) AS n FROM d GROUP BY team_id, test_mode, hour, type
    ORDER BY team_id, test_mode, hour, type
  LOOP
    INSERT INTO stats_hourly AS t (team_id, test_mode, hour, type, n) VALUES (r.team_id, r.test_mode, r.hour, r.type, r.n)
    ON CONFLICT (team_id, test_mode, hour, type) DO UPDATE SET n = t.n + excluded.n;
  END LOOP;
  FOR r IN
    WITH d AS (DELETE FROM site_hourly_delta WHERE xact = pg_current_xact_id() RETURNING *)
    SELECT hour, site, kind, sum(n) AS n FROM d GROUP BY hour, site, kind ORDER BY hour, site, kind
  LOOP
    INSERT INTO site_hourly AS t (hour, site, kind, n) VALUES (r.hour, r.site, r.kind, r.n)
    ON CONFLICT (hour, site, kind) DO UPDATE SET n = t.n + excluded.n;
  END LOOP;
  RETURN NULL;
END;
$$;
