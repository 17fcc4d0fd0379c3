-- PostgreSQL only (SQLite's 020 changes nothing). The COMMIT-time fold of the counter deltas (017's counters_fold)
-- runs with sequential scans off, so it always finds a transaction's own delta rows by the `xact` index.
-- Why: between transactions the delta tables are empty, and that is what autovacuum's ANALYZE and VACUUM record
-- (no rows, no pages). A session that plans the fold's `DELETE … WHERE xact = pg_current_xact_id()` after that takes
-- a scan of the whole table for the cheapest way, and keeps that plan (plpgsql caches it) while the dead rows of
-- every transaction since the last vacuum pile up: under the API bench, 300–420 µs a fold instead of ~40, in the runs
-- where autovacuum had passed early (docs/postgres-notes.md "Session 12"). Every statement of the fold has an
-- index to go by (the delta tables' `xact`, the counter tables' primary keys).
ALTER FUNCTION counters_fold() SET enable_seqscan = off;
