-- Nothing changes in SQLite: PostgreSQL's 020 makes its COMMIT-time counter fold read the delta tables by index.
-- The file keeps both engines at the same migration versions (copy to PostgreSQL compares them).
SELECT 1;
