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
DROP TRIGGER queue_counts_insert;
DROP TRIGGER queue_counts_update;
DROP TRIGGER queue_counts_delete;
DROP TABLE queue_counts;

CREATE TABLE queue_counts (
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  sender_domain TEXT NOT NULL,
  recipients INTEGER NOT NULL,
  held INTEGER NOT NULL,
  deferred INTEGER NOT NULL,
  PRIMARY KEY (team_id, domain, sender_domain)
) WITHOUT ROWID;

INSERT INTO queue_counts (team_id, domain, sender_domain, recipients, held, deferred)
SELECT e.team_id, d.domain, e.sender_domain, count(*), sum(d.held_at IS NOT NULL), sum(d.held_at IS NULL AND d.attempts > 0)
FROM deliveries d JOIN emails e ON e.seq = d.email_seq
WHERE d.status IN ('queued', 'sent', 'delivery_delayed')
GROUP BY e.team_id, d.domain, e.sender_domain;

CREATE TABLE queue_slots (
  slot INTEGER NOT NULL,
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  sender_domain TEXT NOT NULL,
  attempted INTEGER NOT NULL,
  recipients INTEGER NOT NULL,
  PRIMARY KEY (slot, team_id, domain, sender_domain, attempted)
) WITHOUT ROWID;

INSERT INTO queue_slots (slot, team_id, domain, sender_domain, attempted, recipients)
SELECT CAST(coalesce(d.next_attempt_at, 0) / 60000 AS INTEGER), e.team_id, d.domain, e.sender_domain, d.attempts > 0, count(*)
FROM deliveries d JOIN emails e ON e.seq = d.email_seq
WHERE d.status IN ('queued', 'sent', 'delivery_delayed') AND d.held_at IS NULL AND d.leased_until IS NULL
GROUP BY 1, 2, 3, 4, 5;

CREATE INDEX deliveries_leased ON deliveries (leased_until) WHERE leased_until IS NOT NULL;
CREATE INDEX deliveries_held ON deliveries (email_seq) WHERE held_at IS NOT NULL;

CREATE TRIGGER emails_key_fixed BEFORE UPDATE OF team_id, sender_domain ON emails
WHEN NEW.team_id IS NOT OLD.team_id OR NEW.sender_domain IS NOT OLD.sender_domain
BEGIN
  SELECT RAISE(ABORT, 'emails.team_id and emails.sender_domain never change');
END;

CREATE TRIGGER queue_counts_insert AFTER INSERT ON deliveries
WHEN NEW.status IN ('queued', 'sent', 'delivery_delayed')
BEGIN
  INSERT INTO queue_counts (team_id, domain, sender_domain, recipients, held, deferred)
  SELECT e.team_id, NEW.domain, e.sender_domain, 1, NEW.held_at IS NOT NULL, NEW.held_at IS NULL AND NEW.attempts > 0
  FROM emails e WHERE e.seq = NEW.email_seq
  ON CONFLICT (team_id, domain, sender_domain) DO UPDATE SET recipients = recipients + excluded.recipients,
    held = held + excluded.held, deferred = deferred + excluded.deferred;
END;

CREATE TRIGGER queue_counts_update AFTER UPDATE OF status, attempts, held_at ON deliveries
WHEN (OLD.status IN ('queued', 'sent', 'delivery_delayed')) IS NOT (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
  OR (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND (
    (OLD.held_at IS NULL) IS NOT (NEW.held_at IS NULL) OR (OLD.attempts > 0) IS NOT (NEW.attempts > 0)))
BEGIN
  INSERT INTO queue_counts (team_id, domain, sender_domain, recipients, held, deferred)
  SELECT team_id, NEW.domain, sender_domain, w1 - w0, w1 * h1 - w0 * h0, w1 * (1 - h1) * a1 - w0 * (1 - h0) * a0
  FROM (SELECT e.team_id, e.sender_domain,
    OLD.status IN ('queued', 'sent', 'delivery_delayed') AS w0, NEW.status IN ('queued', 'sent', 'delivery_delayed') AS w1,
    OLD.held_at IS NOT NULL AS h0, NEW.held_at IS NOT NULL AS h1, OLD.attempts > 0 AS a0, NEW.attempts > 0 AS a1
    FROM emails e WHERE e.seq = NEW.email_seq)
  WHERE true
  ON CONFLICT (team_id, domain, sender_domain) DO UPDATE SET recipients = recipients + excluded.recipients,
    held = held + excluded.held, deferred = deferred + excluded.deferred;
  DELETE FROM queue_counts WHERE recipients <= 0
    AND (team_id, domain, sender_domain) = (SELECT e.team_id, NEW.domain, e.sender_domain FROM emails e WHERE e.seq = NEW.email_seq);
END;

CREATE TRIGGER queue_counts_delete AFTER DELETE ON deliveries
WHEN OLD.status IN ('queued', 'sent', 'delivery_delayed')
BEGIN
  UPDATE queue_counts SET recipients = recipients - 1, held = held - (OLD.held_at IS NOT NULL),
    deferred = deferred - (OLD.held_at IS NULL AND OLD.attempts > 0)
  WHERE (team_id, domain, sender_domain) = (SELECT e.team_id, OLD.domain, e.sender_domain FROM emails e WHERE e.seq = OLD.email_seq);
  DELETE FROM queue_counts WHERE recipients <= 0
    AND (team_id, domain, sender_domain) = (SELECT e.team_id, OLD.domain, e.sender_domain FROM emails e WHERE e.seq = OLD.email_seq);
END;

-- A recipient's slot: NULL when final, held or leased, else the minute of its next attempt. The WHEN clauses
-- and bodies below spell it out for OLD and NEW (a trigger cannot call a function of its own).
CREATE TRIGGER queue_slots_insert AFTER INSERT ON deliveries
WHEN NEW.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.held_at IS NULL AND NEW.leased_until IS NULL
BEGIN
  INSERT INTO queue_slots (slot, team_id, domain, sender_domain, attempted, recipients)
  SELECT CAST(coalesce(NEW.next_attempt_at, 0) / 60000 AS INTEGER), e.team_id, NEW.domain, e.sender_domain,
    NEW.attempts > 0, 1
  FROM emails e WHERE e.seq = NEW.email_seq
  ON CONFLICT (slot, team_id, domain, sender_domain, attempted) DO UPDATE SET recipients = recipients + 1;
END;

CREATE TRIGGER queue_slots_update AFTER UPDATE OF status, attempts, held_at, leased_until, next_attempt_at ON deliveries
WHEN (CASE WHEN OLD.status NOT IN ('queued', 'sent', 'delivery_delayed') OR OLD.held_at IS NOT NULL
    OR OLD.leased_until IS NOT NULL THEN NULL ELSE CAST(coalesce(OLD.next_attempt_at, 0) / 60000 AS INTEGER) END)
  IS NOT (CASE WHEN NEW.status NOT IN ('queued', 'sent', 'delivery_delayed') OR NEW.held_at IS NOT NULL
    OR NEW.leased_until IS NOT NULL THEN NULL ELSE CAST(coalesce(NEW.next_attempt_at, 0) / 60000 AS INTEGER) END)
  OR ((OLD.attempts > 0) IS NOT (NEW.attempts > 0) AND (
    (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND OLD.held_at IS NULL AND OLD.leased_until IS NULL)
    OR (NEW.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.held_at IS NULL AND NEW.leased_until IS NULL)))
BEGIN
  UPDATE queue_slots SET recipients = recipients - 1
  WHERE OLD.status IN ('queued', 'sent', 'delivery_delayed') AND OLD.held_at IS NULL AND OLD.leased_until IS NULL
    AND (slot, team_id, domain, sender_domain, attempted) = (SELECT CAST(coalesce(OLD.next_attempt_at, 0) / 60000 AS INTEGER),
      e.team_id, OLD.domain, e.sender_domain, OLD.attempts > 0 FROM emails e WHERE e.seq = OLD.email_seq);
  DELETE FROM queue_slots WHERE recipients <= 0
    AND OLD.status IN ('queued', 'sent', 'delivery_delayed') AND OLD.held_at IS NULL AND OLD.leased_until IS NULL
    AND (slot, team_id, domain, sender_domain, attempted) = (SELECT CAST(coalesce(OLD.next_attempt_at, 0) / 60000 AS INTEGER),
      e.team_id, OLD.domain, e.sender_domain, OLD.attempts > 0 FROM emails e WHERE e.seq = OLD.email_seq);
  INSERT INTO queue_slots (slot, team_id, domain, sender_domain, attempted, recipients)
  SELECT CAST(coalesce(NEW.next_attempt_at, 0) / 60000 AS INTEGER), e.team_id, NEW.domain, e.sender_domain,
    NEW.attempts > 0, 1
  FROM emails e WHERE e.seq = NEW.email_seq
    AND NEW.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.held_at IS NULL AND NEW.leased_until IS NULL
  ON CONFLICT (slot, team_id, domain, sender_domain, attempted) DO UPDATE SET recipients = recipients + 1;
END;

CREATE TRIGGER queue_slots_delete AFTER DELETE ON deliveries
WHEN OLD.status IN ('queued', 'sent', 'delivery_delayed') AND OLD.held_at IS NULL AND OLD.leased_until IS NULL
BEGIN
  UPDATE queue_slots SET recipients = recipients - 1
  WHERE (slot, team_id, domain, sender_domain, attempted) = (SELECT CAST(coalesce(OLD.next_attempt_at, 0) / 60000 AS INTEGER),
    e.team_id, OLD.domain, e.sender_domain, OLD.attempts > 0 FROM emails e WHERE e.seq = OLD.email_seq);
  DELETE FROM queue_slots WHERE recipients <= 0
    AND (slot, team_id, domain, sender_domain, attempted) = (SELECT CAST(coalesce(OLD.next_attempt_at, 0) / 60000 AS INTEGER),
      e.team_id, OLD.domain, e.sender_domain, OLD.attempts > 0 FROM emails e WHERE e.seq = OLD.email_seq);
END;
