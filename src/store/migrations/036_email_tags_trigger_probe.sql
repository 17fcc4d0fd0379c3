-- PostgreSQL's 036 rewrites its email_tags trigger so its generic plan probes the primary key instead of scanning the
-- table. SQLite's trigger (032) already searches the primary key (EXPLAIN QUERY PLAN: SEARCH email_tags USING PRIMARY
-- KEY (team_id=? AND tag=? AND test_mode=? AND email_seq=?)): nothing to change here; the file keeps the two
-- engines' migrations numbered alike (pg-schema.test).
SELECT 1;
