-- The trigger of 032 keeps email_tags.status equal to emails.status. Its UPDATE matched the tags with
-- `tag IN (SELECT jsonb_array_elements_text(…))` and left the row's current status out. PL/pgSQL caches the plan for
-- the session's life; made before the table had statistics (a new install, a burst before autovacuum's next ANALYZE),
-- it bounded an index by team_id (and mode) only and filtered the rest: every status change of a tagged email read
-- its team's whole range of email_tags (auto_explain in `bench -- api`: `Index Scan using email_tags_status, Index
-- Cond: team_id, test_mode, email_seq; Filter: tag`, 132 buffers and ~1.2 ms per change on average over 11,080
-- changes, 14 s of the server's ~20; it grows with the table). Now each tag is its own statement with every column of
-- the status index bound by equality — team, tag, mode, the row's current status (OLD.status: the trigger keeps the
-- two equal) and the email — so whichever index the planner takes, with or without statistics, it is one probe. A row
-- that was not at OLD.status (none should be) is still brought to the new one, by its primary key.
-- SQLite's trigger already searched the primary key (EXPLAIN QUERY PLAN; its 036 changes nothing).
CREATE OR REPLACE FUNCTION email_tags_status() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t TEXT;
  n BIGINT;
BEGIN
  IF NEW.tags_json IS NULL OR NEW.status = OLD.status THEN
    RETURN NULL;
  END IF;
  FOR t IN SELECT DISTINCT jsonb_array_elements_text(NEW.tags_json::jsonb) LOOP
    UPDATE email_tags SET status = NEW.status
      WHERE team_id = NEW.team_id AND tag = t AND test_mode = NEW.test_mode AND status = OLD.status
      AND email_seq = NEW.seq;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
      UPDATE email_tags SET status = NEW.status
        WHERE team_id = NEW.team_id AND tag = t AND test_mode = NEW.test_mode AND email_seq = NEW.seq
        AND status <> NEW.status;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;
