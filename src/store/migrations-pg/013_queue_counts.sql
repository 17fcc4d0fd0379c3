-- PostgreSQL 15 translation of migrations/013_queue_counts.sql. Differences from the SQLite text, same effect:
--   * Backfill: sum(bool) -> count(*) FILTER (WHERE …) (PostgreSQL has no sum(boolean); a boolean is no integer).
--   * `x IS NOT y` on values -> `x IS DISTINCT FROM y`.
--   * SQLite triggers (a WHEN clause and a body of statements) -> a plpgsql function per trigger, attached FOR EACH ROW
--     with the same WHEN condition; RAISE(ABORT, msg) -> RAISE EXCEPTION (aborts the statement, and the transaction
--     as in SQLite the statement's changes are undone; the caller sees the same message).
--   * Booleans used as 0/1 (held_at IS NOT NULL, …) -> explicit ::int casts (a boolean does not add to an integer).
--   * ON CONFLICT DO UPDATE SET: the old row's columns are qualified (queue_counts.recipients); an unqualified name
--     there is ambiguous in PostgreSQL (the target table and `excluded` both have it).
--   * UPDATE OF status, attempts, held_at: both engines fire when one of those columns is named in the UPDATE's SET
--     (whether or not its value changes); the WHEN condition then picks the updates that move a counter.
-- Queue summary counters (operations.md "Queue control"): waiting recipients per team and recipient domain,
-- kept by triggers in the very transaction of each write that changes them (insertEmail's rows, writeDelivery's
-- status and attempts, writeQueueState's hold), so the unfiltered `mta queue summary` reads O(groups) rows.
-- held: waiting and held. deferred: waiting, not held, attempted at least once (Postfix's deferred queue).
-- A row whose recipients reach 0 is deleted. Claims (leased_until, next_attempt_at) never touch it.
CREATE TABLE queue_counts (
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  recipients BIGINT NOT NULL,
  held BIGINT NOT NULL,
  deferred BIGINT NOT NULL,
  PRIMARY KEY (team_id, domain)
);

INSERT INTO queue_counts (team_id, domain, recipients, held, deferred)
SELECT e.team_id, d.domain, count(*), count(*) FILTER (WHERE d.held_at IS NOT NULL),
  count(*) FILTER (WHERE d.held_at IS NULL AND d.attempts > 0)
FROM deliveries d JOIN emails e ON e.seq = d.email_seq
WHERE d.status IN ('queued', 'sent', 'delivery_delayed')
GROUP BY e.team_id, d.domain;

-- The counters are keyed by a row's email and domain: neither ever changes once written.
CREATE FUNCTION deliveries_key_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'deliveries.email_seq and deliveries.domain never change';
END;
$$;
CREATE TRIGGER deliveries_key_fixed BEFORE UPDATE OF email_seq, domain ON deliveries
FOR EACH ROW WHEN (NEW.email_seq IS DISTINCT FROM OLD.email_seq OR NEW.domain IS DISTINCT FROM OLD.domain)
EXECUTE FUNCTION deliveries_key_fixed();

CREATE FUNCTION queue_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts (team_id, domain, recipients, held, deferred)
  VALUES ((SELECT e.team_id FROM emails e WHERE e.seq = NEW.email_seq), NEW.domain, 1, (NEW.held_at IS NOT NULL)::int,
    (NEW.held_at IS NULL AND NEW.attempts > 0)::int)
  ON CONFLICT (team_id, domain) DO UPDATE SET recipients = queue_counts.recipients + excluded.recipients,
    held = queue_counts.held + excluded.held, deferred = queue_counts.deferred + excluded.deferred;
  RETURN NULL;
END;
$$;
CREATE TRIGGER queue_counts_insert AFTER INSERT ON deliveries
FOR EACH ROW WHEN (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
EXECUTE FUNCTION queue_counts_insert();

CREATE FUNCTION queue_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  w0 int := (OLD.status IN ('queued', 'sent', 'delivery_delayed'))::int;
  w1 int := (NEW.status IN ('queued', 'sent', 'delivery_delayed'))::int;
  h0 int := (OLD.held_at IS NOT NULL)::int;
  h1 int := (NEW.held_at IS NOT NULL)::int;
  a0 int := (OLD.attempts > 0)::int;
  a1 int := (NEW.attempts > 0)::int;
  v_team text := (SELECT e.team_id FROM emails e WHERE e.seq = NEW.email_seq);
BEGIN
  INSERT INTO queue_counts (team_id, domain, recipients, held, deferred)
  VALUES (v_team, NEW.domain, w1 - w0, w1 * h1 - w0 * h0, w1 * (1 - h1) * a1 - w0 * (1 - h0) * a0)
  ON CONFLICT (team_id, domain) DO UPDATE SET recipients = queue_counts.recipients + excluded.recipients,
    held = queue_counts.held + excluded.held, deferred = queue_counts.deferred + excluded.deferred;
  DELETE FROM queue_counts q WHERE q.recipients <= 0 AND q.team_id = v_team AND q.domain = NEW.domain;
  RETURN NULL;
END;
$$;
CREATE TRIGGER queue_counts_update AFTER UPDATE OF status, attempts, held_at ON deliveries
FOR EACH ROW WHEN ((OLD.status IN ('queued', 'sent', 'delivery_delayed')) IS DISTINCT FROM (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
  OR (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND (
    (OLD.held_at IS NULL) IS DISTINCT FROM (NEW.held_at IS NULL) OR (OLD.attempts > 0) IS DISTINCT FROM (NEW.attempts > 0))))
EXECUTE FUNCTION queue_counts_update();

CREATE FUNCTION queue_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_team text := (SELECT e.team_id FROM emails e WHERE e.seq = OLD.email_seq);
BEGIN
  UPDATE queue_counts q SET recipients = q.recipients - 1, held = q.held - (OLD.held_at IS NOT NULL)::int,
    deferred = q.deferred - (OLD.held_at IS NULL AND OLD.attempts > 0)::int
  WHERE q.team_id = v_team AND q.domain = OLD.domain;
  DELETE FROM queue_counts q WHERE q.recipients <= 0 AND q.team_id = v_team AND q.domain = OLD.domain;
  RETURN NULL;
END;
$$;
CREATE TRIGGER queue_counts_delete AFTER DELETE ON deliveries
FOR EACH ROW WHEN (OLD.status IN ('queued', 'sent', 'delivery_delayed'))
EXECUTE FUNCTION queue_counts_delete();
