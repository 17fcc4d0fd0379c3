-- PostgreSQL 15 translation of migrations/008_webhook_mode.sql (as is: ADD COLUMN with a CHECK works the same).
-- Test and live mode of webhook endpoints: an endpoint created with a test key is 'test', seen only by
-- test keys' calls too, and receives only test emails' events. Endpoints made before this rule are 'live'.
ALTER TABLE webhook_endpoints ADD COLUMN mode TEXT NOT NULL DEFAULT 'live' CHECK (mode IN ('test', 'live'));
