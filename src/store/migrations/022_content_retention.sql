-- Content retention (issue 32): an email's content (html, text, the submitted message, attachment bytes, the raw
-- copy of reports about it) is deleted MTA_CONTENT_RETENTION_DAYS after the email is final (test mode:
-- MTA_TEST_CONTENT_RETENTION_HOURS); the row, its events and its attachment list stay. content_expired_at says
-- when that happened (NULL while kept). A final email's updated_at is when it became final (only status moves
-- write it). The index holds only final emails whose content is still there: nothing is added to it when an email
-- is accepted, an entry when it ends, and the retention pass reads the expired ones from its head and removes them.
-- Its status list is the FINAL set of core/status.ts, written the same way in store/retention.ts (SQLite uses a
-- partial index only for a query repeating its condition).
ALTER TABLE emails ADD COLUMN content_expired_at INTEGER;
CREATE INDEX emails_content_expiry ON emails (test_mode, updated_at)
  WHERE content_expired_at IS NULL AND status IN ('delivered', 'bounced', 'complained', 'failed', 'canceled');
