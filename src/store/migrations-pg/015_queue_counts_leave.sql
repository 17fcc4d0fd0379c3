-- SQLite's 015 (the same triggers by name): a waiting recipient reaching a final status has a trigger of its own,
-- and a counter row that reaches 0 is deleted by a trigger on queue_counts. Here both record the same delta as
-- before (queue_counts_update() computes any change) and the COMMIT-time fold deletes rows at 0 as it did; the
-- zero trigger deletes such a row at once all the same.
DROP TRIGGER queue_counts_update ON deliveries;

CREATE TRIGGER queue_counts_update AFTER UPDATE OF status, attempts, held_at ON deliveries
FOR EACH ROW WHEN (((OLD.status IN ('queued', 'sent', 'delivery_delayed')) IS DISTINCT FROM (NEW.status IN ('queued', 'sent', 'delivery_delayed'))
  OR (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND (
    (OLD.held_at IS NULL) IS DISTINCT FROM (NEW.held_at IS NULL) OR (OLD.attempts > 0) IS DISTINCT FROM (NEW.attempts > 0))))
  AND NOT (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.status NOT IN ('queued', 'sent', 'delivery_delayed')))
EXECUTE FUNCTION queue_counts_update();

CREATE TRIGGER queue_counts_leave AFTER UPDATE OF status ON deliveries
FOR EACH ROW WHEN (OLD.status IN ('queued', 'sent', 'delivery_delayed') AND NEW.status NOT IN ('queued', 'sent', 'delivery_delayed'))
EXECUTE FUNCTION queue_counts_update();

CREATE FUNCTION queue_counts_zero() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM queue_counts q WHERE q.team_id = NEW.team_id AND q.domain = NEW.domain AND q.sender_domain = NEW.sender_domain;
  RETURN NULL;
END;
$$;

CREATE TRIGGER queue_counts_zero AFTER UPDATE OF recipients ON queue_counts
FOR EACH ROW WHEN (NEW.recipients <= 0)
EXECUTE FUNCTION queue_counts_zero();
