-- PostgreSQL only (SQLite's 019 changes nothing). The queue counters' deltas of updated deliveries are written once
-- per UPDATE statement, from its transition tables, as 018 does for INSERTs; 017's row trigger keeps DELETE only.
-- Why: the delivery loop writes a batch of results as one UPDATE of all its recipients (src/store/result-writes.ts),
-- and 017's row trigger then ran, per row, a plpgsql call, a read of the email and a delta INSERT: ~21 µs of the
-- ~38 µs a row cost (EXPLAIN ANALYZE of a 60-row result UPDATE). Per statement it is one INSERT … SELECT per counter
-- table, grouped by counter key, whatever the number of rows.
-- Same deltas as 017 (a row's old and new values, matched by id): queue_counts when a recipient enters or leaves the
-- waiting states, or is held, released or first attempted while waiting; queue_slots when its slot (NULL when
-- final, held or leased, else the minute of its next attempt) or, while in a slot, its attempted flag changes.
-- Rows whose counters do not move (a lease taken or extended) write nothing, and a statement that moves none
-- writes no delta row at all. Transition tables allow one event per trigger: DELETE keeps 017's row trigger.
DROP TRIGGER deliveries_counts ON deliveries;
CREATE TRIGGER deliveries_counts AFTER DELETE ON deliveries
FOR EACH ROW EXECUTE FUNCTION deliveries_counts();

-- Each email's team and sender domain are read by its seq (LATERAL … OFFSET 0), as in 018, and only for rows that
-- move a counter.
CREATE FUNCTION deliveries_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  WITH c AS (
    SELECT o.email_seq, o.domain,
      (o.status IN ('queued', 'sent', 'delivery_delayed'))::int AS w0, (o.held_at IS NOT NULL)::int AS h0,
      (o.attempts > 0)::int AS a0,
      CASE WHEN o.status IN ('queued', 'sent', 'delivery_delayed') AND o.held_at IS NULL AND o.leased_until IS NULL
        THEN coalesce(o.next_attempt_at, 0) / 60000 END AS s0,
      (n.status IN ('queued', 'sent', 'delivery_delayed'))::int AS w1, (n.held_at IS NOT NULL)::int AS h1,
      (n.attempts > 0)::int AS a1,
      CASE WHEN n.status IN ('queued', 'sent', 'delivery_delayed') AND n.held_at IS NULL AND n.leased_until IS NULL
        THEN coalesce(n.next_attempt_at, 0) / 60000 END AS s1
    FROM old_rows o JOIN new_rows n ON n.id = o.id
  ), d AS (
    SELECT c.*, w1 - w0 AS dr, w1 * h1 - w0 * h0 AS dh, w1 * (1 - h1) * a1 - w0 * (1 - h0) * a0 AS dd,
      (s0 IS DISTINCT FROM s1 OR (s0 IS NOT NULL AND a0 <> a1)) AS moved
    FROM c
  ), k AS (
    SELECT d.*, e.team_id, e.sender_domain FROM d
    CROSS JOIN LATERAL (SELECT e.team_id, e.sender_domain FROM emails e WHERE e.seq = d.email_seq OFFSET 0) e
    WHERE d.dr <> 0 OR d.dh <> 0 OR d.dd <> 0 OR d.moved
  ), counts AS (
    INSERT INTO queue_counts_delta (team_id, domain, sender_domain, recipients, held, deferred)
    SELECT team_id, domain, sender_domain, sum(dr), sum(dh), sum(dd) FROM k
    WHERE dr <> 0 OR dh <> 0 OR dd <> 0
    GROUP BY team_id, domain, sender_domain
    HAVING sum(dr) <> 0 OR sum(dh) <> 0 OR sum(dd) <> 0
  )
  INSERT INTO queue_slots_delta (slot, team_id, domain, sender_domain, attempted, recipients)
  SELECT slot, team_id, domain, sender_domain, attempted, sum(r) FROM (
    SELECT s0 AS slot, team_id, domain, sender_domain, a0 AS attempted, -1 AS r FROM k WHERE moved AND s0 IS NOT NULL
    UNION ALL
    SELECT s1, team_id, domain, sender_domain, a1, 1 FROM k WHERE moved AND s1 IS NOT NULL
  ) m
  GROUP BY slot, team_id, domain, sender_domain, attempted
  HAVING sum(r) <> 0;
  RETURN NULL;
END;
$$;

CREATE TRIGGER deliveries_counts_update AFTER UPDATE ON deliveries
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION deliveries_counts_updated();
