-- PostgreSQL 15 translation of migrations/014_queue_states.sql. Differences from the SQLite text, same effect:
--   * DROP TRIGGER names its table (PostgreSQL triggers belong to a table); 013's trigger functions are replaced
--     (CREATE OR REPLACE FUNCTION) with re-keyed bodies that append deltas (below: several nodes).
--   * Backfills: sum(bool) -> count(*) FILTER (WHERE …); a boolean stored in an integer column -> ::int.
--   * CAST(coalesce(x, 0) / 60000 AS INTEGER) -> (coalesce(x, 0) / 60000)::bigint: both engines divide integers
--     truncating toward zero; the minute is kept as BIGINT like every integer here.
--   * The slot expression, spelled out for OLD and NEW in SQLite (a SQLite trigger cannot call a function of its own),
--     is one IMMUTABLE SQL function queue_slot(status, held_at, leased_until, next_attempt_at) here, used in the
--     triggers' WHEN clauses and bodies.
--   * `x IS NOT y` -> `x IS DISTINCT FROM y`; RAISE(ABORT, msg) -> RAISE EXCEPTION msg.
--   * Row-value lookups `(team_id, domain, sender_domain) = (SELECT …)` -> INSERT … SELECT … FROM emails of the delta
--     rows (nothing written when the email row is missing, impossible under the foreign key, as in SQLite).
--   * The counters are changed through per-transaction deltas folded at COMMIT (see "Several nodes" below).
-- Queue summary by state and with filters from counters (operations.md "Queue control"), kept by triggers in the
-- very transaction of each write, backfilled here:
-- * queue_counts (013's, re-keyed): waiting recipients per team, recipient domain AND sender domain, so the
--   team, domain, site and sender-domain filters select counter rows. held and deferred as in 013.
-- * queue_slots: the waiting recipients neither held nor leased, per (slot, team, domain, sender domain,
--   attempted) where slot is the minute of the next attempt (next_attempt_at / 60000; NULL counts as minute 0,
--   due). A summary at time `now` reads the slots before now's minute (due), counts the current minute's through
--   deliveries_due, and leaves the rest to `scheduled` (never attempted) or `deferred` (attempted). A claim takes
--   its row out of the slots (one decrement) and a settlement puts a still waiting one back (one increment); the
--   delivery loop's other writes while the lease runs (results, lease extensions) touch no slot.
-- * deliveries_leased: the leased recipients (at most the delivery loop's claims in memory), read one by one for
--   `in_flight` (or their own state once the lease ran out); deliveries_held: the held ones in email order, for
--   the oldest held (holds are rare writes).
-- The emails' team_id and sender_domain, like the deliveries' email_seq and domain (013), never change.
DROP TRIGGER queue_counts_insert ON deliveries;
DROP TRIGGER queue_counts_update ON deliveries;
DROP TRIGGER queue_counts_delete ON deliveries;
DROP TABLE queue_counts;

CREATE TABLE queue_counts (
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  sender_domain TEXT NOT NULL,
  recipients BIGINT NOT NULL,
  held BIGINT NOT NULL,
  deferred BIGINT NOT NULL,
  PRIMARY KEY (team_id, domain, sender_domain)
);

INSERT INTO queue_counts (team_id, domain, sender_domain, recipients, held, deferred)
SELECT e.team_id, d.domain, e.sender_domain, count(*), count(*) FILTER (WHERE d.held_at IS NOT NULL),
  count(*) FILTER (WHERE d.held_at IS NULL AND d.attempts > 0)
FROM deliveries d JOIN emails e ON e.seq = d.email_seq
WHERE d.status IN ('queued', 'sent', 'delivery_delayed')
GROUP BY e.team_id, d.domain, e.sender_domain;

CREATE TABLE queue_slots (
  slot BIGINT NOT NULL,
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  sender_domain TEXT NOT NULL,
  attempted BIGINT NOT NULL,
  recipients BIGINT NOT NULL,
  PRIMARY KEY (slot, team_id, domain, sender_domain, attempted)
);

INSERT INTO queue_slots (slot, team_id, domain, sender_domain, attempted, recipients)
SELECT (coalesce(d.next_attempt_at, 0) / 60000)::bigint, e.team_id, d.domain, e.sender_domain, (d.attempts > 0)::int,
  count(*)
FROM deliveries d JOIN emails e ON e.seq = d.email_seq
WHERE d.status IN ('queued', 'sent', 'delivery_delayed') AND d.held_at IS NULL AND d.leased_until IS NULL
GROUP BY 1, 2, 3, 4, 5;

CREATE INDEX deliveries_leased ON deliveries (leased_until) WHERE leased_until IS NOT NULL;
CREATE INDEX deliveries_held ON deliveries (email_seq) WHERE held_at IS NOT NULL;

CREATE FUNCTION emails_key_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'emails.team_id and emails.sender_domain never change';
END;
$$;
CREATE TRIGGER emails_key_fixed BEFORE UPDATE OF team_id, sender_domain ON emails
FOR EACH ROW WHEN (NEW.team_id IS DISTINCT FROM OLD.team_id OR NEW.sender_domain IS DISTINCT FROM OLD.sender_domain)
EXECUTE FUNCTION emails_key_fixed();

-- A recipient's slot: NULL when final, held or leased, else the minute of its next attempt.
CREATE FUNCTION queue_slot(status text, held_at bigint, leased_until bigint, next_attempt_at bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN status NOT IN ('queued', 'sent', 'delivery_delayed') OR held_at IS NOT NULL
    OR leased_until IS NOT NULL THEN NULL ELSE (coalesce(next_attempt_at, 0) / 60000)::bigint END
$$;

-- Several nodes on one database (PostgreSQL only). Updating a shared counter row in place holds its lock until the
-- transaction ends, and a node's transaction touches counter rows (and a team's row, for credits) in whatever order
-- its requests came: two nodes then deadlock. So the trigger functions do not update the counters: each change is appended to a
-- per-transaction delta table (an insert takes no lock another writer waits for), and at COMMIT a deferred
-- constraint trigger folds this transaction's deltas into queue_counts and queue_slots in key order (counts first,
-- then slots; the stats counters likewise, migrations-pg only). Two transactions then take counter locks in the same
-- order and never deadlock on them. Delta rows never outlive their transaction (inserted and folded in it), so the
-- tables are UNLOGGED.
CREATE UNLOGGED TABLE queue_counts_delta (
  pid INTEGER NOT NULL,
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  sender_domain TEXT NOT NULL,
  recipients BIGINT NOT NULL,
  held BIGINT NOT NULL,
  deferred BIGINT NOT NULL
);
CREATE INDEX queue_counts_delta_pid ON queue_counts_delta (pid);
CREATE UNLOGGED TABLE queue_slots_delta (
  pid INTEGER NOT NULL,
  slot BIGINT NOT NULL,
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  sender_domain TEXT NOT NULL,
  attempted BIGINT NOT NULL,
  recipients BIGINT NOT NULL
);
CREATE INDEX queue_slots_delta_pid ON queue_slots_delta (pid);
-- The stats counters (011), added to by the store (src/store/stats.ts) rather than by triggers.
CREATE UNLOGGED TABLE stats_hourly_delta (
  pid INTEGER NOT NULL,
  team_id TEXT NOT NULL,
  test_mode BIGINT NOT NULL,
  hour BIGINT NOT NULL,
  type TEXT NOT NULL,
  n BIGINT NOT NULL
);
CREATE INDEX stats_hourly_delta_pid ON stats_hourly_delta (pid);
CREATE UNLOGGED TABLE site_hourly_delta (
  pid INTEGER NOT NULL,
  hour BIGINT NOT NULL,
  site TEXT NOT NULL,
  kind TEXT NOT NULL,
  n BIGINT NOT NULL
);
CREATE INDEX site_hourly_delta_pid ON site_hourly_delta (pid);

CREATE OR REPLACE FUNCTION queue_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts_delta (pid, team_id, domain, sender_domain, recipients, held, deferred)
  SELECT pg_backend_pid(), e.team_id, NEW.domain, e.sender_domain, 1, (NEW.held_at IS NOT NULL)::int,
    (NEW.held_at IS NULL AND NEW.attempts > 0)::int
  FROM emails e WHERE e.seq = NEW.email_seq;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queue_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  w0 int := (OLD.status IN ('queued', 'sent', 'delivery_delayed'))::int;
  w1 int := (NEW.status IN ('queued', 'sent', 'delivery_delayed'))::int;
  h0 int := (OLD.held_at IS NOT NULL)::int;
  h1 int := (NEW.held_at IS NOT NULL)::int;
  a0 int := (OLD.attempts > 0)::int;
  a1 int := (NEW.attempts > 0)::int;
BEGIN
  INSERT INTO queue_counts_delta (pid, team_id, domain, sender_domain, recipients, held, deferred)
  SELECT pg_backend_pid(), e.team_id, NEW.domain, e.sender_domain, w1 - w0, w1 * h1 - w0 * h0,
    w1 * (1 - h1) * a1 - w0 * (1 - h0) * a0
  FROM emails e WHERE e.seq = NEW.email_seq;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queue_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts_delta (pid, team_id, domain, sender_domain, recipients, held, deferred)
  SELECT pg_backend_pid(), e.team_id, OLD.domain, e.sender_domain, -1, -(OLD.held_at IS NOT NULL)::int,
    -(OLD.held_at IS NULL AND OLD.attempts > 0)::int
  FROM emails e WHERE e.seq = OLD.email_seq;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queue_slots_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_slots_delta (pid, slot, team_id, domain, sender_domain, attempted, recipients)
  SELECT pg_backend_pid(), queue_slot(NEW.status, NEW.held_at, NEW.leased_until, NEW.next_attempt_at), e.team_id,
    NEW.domain, e.sender_domain, (NEW.attempts > 0)::int, 1
  FROM emails e WHERE e.seq = NEW.email_seq;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queue_slots_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s0 bigint := queue_slot(OLD.status, OLD.held_at, OLD.leased_until, OLD.next_attempt_at);
  s1 bigint := queue_slot(NEW.status, NEW.held_at, NEW.leased_until, NEW.next_attempt_at);
BEGIN
  IF s0 IS NOT NULL THEN
    INSERT INTO queue_slots_delta (pid, slot, team_id, domain, sender_domain, attempted, recipients)
    SELECT pg_backend_pid(), s0, e.team_id, OLD.domain, e.sender_domain, (OLD.attempts > 0)::int, -1
    FROM emails e WHERE e.seq = OLD.email_seq;
  END IF;
  IF s1 IS NOT NULL THEN
    INSERT INTO queue_slots_delta (pid, slot, team_id, domain, sender_domain, attempted, recipients)
    SELECT pg_backend_pid(), s1, e.team_id, NEW.domain, e.sender_domain, (NEW.attempts > 0)::int, 1
    FROM emails e WHERE e.seq = NEW.email_seq;
  END IF;
  RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION queue_slots_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_slots_delta (pid, slot, team_id, domain, sender_domain, attempted, recipients)
  SELECT pg_backend_pid(), queue_slot(OLD.status, OLD.held_at, OLD.leased_until, OLD.next_attempt_at), e.team_id,
    OLD.domain, e.sender_domain, (OLD.attempts > 0)::int, -1
  FROM emails e WHERE e.seq = OLD.email_seq;
  RETURN NULL;
END;
$$;

-- The triggers (their WHEN clauses as in SQLite's 014).
CREATE TRIGGER queue_counts_insert AFTER INSERT ON deliveries
FOR EACH ROW WHEN (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
EXECUTE FUNCTION queue_counts_insert();

CREATE TRIGGER queue_counts_update AFTER UPDATE OF status, attempts, held_at ON deliveries
FOR EACH ROW WHEN ((OLD.status IN ('queued', 'sent', 'delivery_delayed')) IS DISTINCT FROM (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
  OR (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND (
    (OLD.held_at IS NULL) IS DISTINCT FROM (NEW.held_at IS NULL) OR (OLD.attempts > 0) IS DISTINCT FROM (NEW.attempts > 0))))
EXECUTE FUNCTION queue_counts_update();

CREATE TRIGGER queue_counts_delete AFTER DELETE ON deliveries
FOR EACH ROW WHEN (OLD.status IN ('queued', 'sent', 'delivery_delayed'))
EXECUTE FUNCTION queue_counts_delete();

CREATE TRIGGER queue_slots_insert AFTER INSERT ON deliveries
FOR EACH ROW WHEN (NEW.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.held_at IS NULL AND NEW.leased_until IS NULL)
EXECUTE FUNCTION queue_slots_insert();

CREATE TRIGGER queue_slots_update AFTER UPDATE OF status, attempts, held_at, leased_until, next_attempt_at ON deliveries
FOR EACH ROW WHEN (queue_slot(OLD.status, OLD.held_at, OLD.leased_until, OLD.next_attempt_at)
    IS DISTINCT FROM queue_slot(NEW.status, NEW.held_at, NEW.leased_until, NEW.next_attempt_at)
  OR ((OLD.attempts > 0) IS DISTINCT FROM (NEW.attempts > 0) AND (
    (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND OLD.held_at IS NULL AND OLD.leased_until IS NULL)
    OR (NEW.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.held_at IS NULL AND NEW.leased_until IS NULL))))
EXECUTE FUNCTION queue_slots_update();

CREATE TRIGGER queue_slots_delete AFTER DELETE ON deliveries
FOR EACH ROW WHEN (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND OLD.held_at IS NULL AND OLD.leased_until IS NULL)
EXECUTE FUNCTION queue_slots_delete();

-- At COMMIT: this transaction's deltas into the counters, table after table in one fixed order and in key order
-- within each (whichever delta table's trigger fires first folds them all); queue rows reaching 0 are deleted.
CREATE FUNCTION counters_fold() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  -- Called once per delta row at COMMIT: the first call folds them all, the others return at once.
  IF current_setting('mta.counters_folded', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('mta.counters_folded', 'on', true);
  FOR r IN
    WITH d AS (DELETE FROM queue_counts_delta WHERE pid = pg_backend_pid() RETURNING *)
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
    WITH d AS (DELETE FROM queue_slots_delta WHERE pid = pg_backend_pid() RETURNING *)
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
    WITH d AS (DELETE FROM stats_hourly_delta WHERE pid = pg_backend_pid() RETURNING *)
    SELECT team_id, test_mode, hour, type, sum(n) AS n FROM d GROUP BY team_id, test_mode, hour, type
    ORDER BY team_id, test_mode, hour, type
  LOOP
    INSERT INTO stats_hourly AS t (team_id, test_mode, hour, type, n) VALUES (r.team_id, r.test_mode, r.hour, r.type, r.n)
    ON CONFLICT (team_id, test_mode, hour, type) DO UPDATE SET n = t.n + excluded.n;
  END LOOP;
  FOR r IN
    WITH d AS (DELETE FROM site_hourly_delta WHERE pid = pg_backend_pid() RETURNING *)
    SELECT hour, site, kind, sum(n) AS n FROM d GROUP BY hour, site, kind ORDER BY hour, site, kind
  LOOP
    INSERT INTO site_hourly AS t (hour, site, kind, n) VALUES (r.hour, r.site, r.kind, r.n)
    ON CONFLICT (hour, site, kind) DO UPDATE SET n = t.n + excluded.n;
  END LOOP;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER queue_counts_fold AFTER INSERT ON queue_counts_delta DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION counters_fold();
CREATE CONSTRAINT TRIGGER queue_slots_fold AFTER INSERT ON queue_slots_delta DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION counters_fold();
CREATE CONSTRAINT TRIGGER stats_hourly_fold AFTER INSERT ON stats_hourly_delta DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION counters_fold();
CREATE CONSTRAINT TRIGGER site_hourly_fold AFTER INSERT ON site_hourly_delta DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION counters_fold();
