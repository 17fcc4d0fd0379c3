-- Queue summary counters (operations.md "Queue control"): waiting recipients per team and recipient domain,
-- kept by triggers in the very transaction of each write that changes them (insertEmail's rows, writeDelivery's
-- status and attempts, writeQueueState's hold), so the unfiltered `mta queue summary` reads O(groups) rows.
-- held: waiting and held. deferred: waiting, not held, attempted at least once (Postfix's deferred queue).
-- A row whose recipients reach 0 is deleted. Claims (leased_until, next_attempt_at) never touch it.
CREATE TABLE queue_counts (
  team_id TEXT NOT NULL,
  domain TEXT NOT NULL,
  recipients INTEGER NOT NULL,
  held INTEGER NOT NULL,
  deferred INTEGER NOT NULL,
  PRIMARY KEY (team_id, domain)
) WITHOUT ROWID;

INSERT INTO queue_counts (team_id, domain, recipients, held, deferred)
SELECT e.team_id, d.domain, count(*), sum(d.held_at IS NOT NULL), sum(d.held_at IS NULL AND d.attempts > 0)
FROM deliveries d JOIN emails e ON e.seq = d.email_seq
WHERE d.status IN ('queued', 'sent', 'delivery_delayed')
GROUP BY e.team_id, d.domain;

-- The counters are keyed by a row's email and domain: neither ever changes once written.
CREATE TRIGGER deliveries_key_fixed BEFORE UPDATE OF email_seq, domain ON deliveries
WHEN NEW.email_seq IS NOT OLD.email_seq OR NEW.domain IS NOT OLD.domain
BEGIN
  SELECT RAISE(ABORT, 'deliveries.email_seq and deliveries.domain never change');
END;

CREATE TRIGGER queue_counts_insert AFTER INSERT ON deliveries
WHEN NEW.status IN ('queued', 'sent', 'delivery_delayed')
BEGIN
  INSERT INTO queue_counts (team_id, domain, recipients, held, deferred)
  VALUES ((SELECT team_id FROM emails WHERE seq = NEW.email_seq), NEW.domain, 1, NEW.held_at IS NOT NULL,
    NEW.held_at IS NULL AND NEW.attempts > 0)
  ON CONFLICT (team_id, domain) DO UPDATE SET recipients = recipients + excluded.recipients,
    held = held + excluded.held, deferred = deferred + excluded.deferred;
END;

CREATE TRIGGER queue_counts_update AFTER UPDATE OF status, attempts, held_at ON deliveries
WHEN (OLD.status IN ('queued', 'sent', 'delivery_delayed')) IS NOT (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
  OR (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND (
    (OLD.held_at IS NULL) IS NOT (NEW.held_at IS NULL) OR (OLD.attempts > 0) IS NOT (NEW.attempts > 0)))
BEGIN
  INSERT INTO queue_counts (team_id, domain, recipients, held, deferred)
  SELECT team_id, NEW.domain, w1 - w0, w1 * h1 - w0 * h0, w1 * (1 - h1) * a1 - w0 * (1 - h0) * a0
  FROM (SELECT (SELECT team_id FROM emails WHERE seq = NEW.email_seq) AS team_id,
    OLD.status IN ('queued', 'sent', 'delivery_delayed') AS w0, NEW.status IN ('queued', 'sent', 'delivery_delayed') AS w1,
    OLD.held_at IS NOT NULL AS h0, NEW.held_at IS NOT NULL AS h1, OLD.attempts > 0 AS a0, NEW.attempts > 0 AS a1)
  WHERE true
  ON CONFLICT (team_id, domain) DO UPDATE SET recipients = recipients + excluded.recipients,
    held = held + excluded.held, deferred = deferred + excluded.deferred;
  DELETE FROM queue_counts WHERE recipients <= 0 AND team_id = (SELECT team_id FROM emails WHERE seq = NEW.email_seq)
    AND domain = NEW.domain;
END;

CREATE TRIGGER queue_counts_delete AFTER DELETE ON deliveries
WHEN OLD.status IN ('queued', 'sent', 'delivery_delayed')
BEGIN
  UPDATE queue_counts SET recipients = recipients - 1, held = held - (OLD.held_at IS NOT NULL),
    deferred = deferred - (OLD.held_at IS NULL AND OLD.attempts > 0)
  WHERE team_id = (SELECT team_id FROM emails WHERE seq = OLD.email_seq) AND domain = OLD.domain;
  DELETE FROM queue_counts WHERE recipients <= 0 AND team_id = (SELECT team_id FROM emails WHERE seq = OLD.email_seq)
    AND domain = OLD.domain;
END;
