-- Test and live mode of webhook endpoints: an endpoint created with a test key is 'test', seen only by
-- test keys' calls too, and receives only test emails' events. Endpoints made before this rule are 'live'.
ALTER TABLE webhook_endpoints ADD COLUMN mode TEXT NOT NULL DEFAULT 'live' CHECK (mode IN ('test', 'live'));
