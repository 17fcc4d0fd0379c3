-- Who vouches for a DMARC report (services/dmarc-auth.ts): authenticated is 1 when a DKIM signature or SPF pass
-- aligned with the reporter's own address vouches for the message, 0 when none does, NULL for a report stored before
-- the check existed; authenticated_by says which (`dkim:google.com`, `spf:google.com`). Only authenticated reports
-- raise alerts, and an authenticated report replaces an unauthenticated one with the same (org_name, report_id).
ALTER TABLE dmarc_reports ADD COLUMN authenticated BIGINT;
ALTER TABLE dmarc_reports ADD COLUMN authenticated_by TEXT;
