-- PostgreSQL 15 translation of migrations/021_hold_owner.sql (json_extract -> jsonb ->>). No semantic difference.
-- Who placed a recipient's hold (operations.md "Queue control", "Security model"): `operator` (CLI, admin API, the
-- operator's dashboard session) or `team` (a team's own dashboard session); NULL while not held. A team releases only
-- its own holds; the operator releases both, and an operator's hold on a team-held recipient makes it the operator's.
-- The counters (013-020) count held vs not held and read held_at only: this column moves none of them.
ALTER TABLE deliveries ADD COLUMN held_by TEXT CHECK (held_by IN ('team', 'operator'));

-- The holds already there: whoever placed the last hold event of that recipient (data.source), else the operator.
UPDATE deliveries SET held_by = coalesce((
  SELECT CASE ev.data_json::jsonb ->> 'source' WHEN 'team' THEN 'team' END FROM events ev
  WHERE ev.email_seq = deliveries.email_seq AND ev.recipient = deliveries.recipient
    AND ev.data_json::jsonb ->> 'action' = 'hold'
  ORDER BY ev.seq DESC LIMIT 1), 'operator')
WHERE held_at IS NOT NULL;
