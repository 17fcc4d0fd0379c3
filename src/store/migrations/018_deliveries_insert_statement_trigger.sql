-- Nothing changes in SQLite: PostgreSQL's 018 writes the counter deltas of inserted deliveries once per INSERT
-- statement (a transition table) instead of once per row.
-- The file keeps both engines at the same migration versions (copy to PostgreSQL compares them).
SELECT 1;
