-- Nothing changes in SQLite: PostgreSQL's 017 merges its seven counter triggers on deliveries into one (a WHEN
-- clause costs PostgreSQL a rebuild per statement; SQLite compiles its triggers with the statement once).
-- The file keeps both engines at the same migration versions (copy to PostgreSQL compares them).
SELECT 1;
