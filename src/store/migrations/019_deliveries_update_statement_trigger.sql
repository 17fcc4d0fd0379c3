-- Nothing changes in SQLite: PostgreSQL's 019 writes the counter deltas of updated deliveries once per UPDATE
-- statement (transition tables) instead of once per row.
-- The file keeps both engines at the same migration versions (copy to PostgreSQL compares them).
SELECT 1;
