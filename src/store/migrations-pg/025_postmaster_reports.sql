-- PostgreSQL translation of migrations/025_postmaster_reports.sql: mail to postmaster@ and abuse@ (RFC 5321 §4.5.1)
-- is kept as an inbound report of kind 'postmaster'.
ALTER TABLE inbound_reports DROP CONSTRAINT inbound_reports_kind_check;
ALTER TABLE inbound_reports ADD CONSTRAINT inbound_reports_kind_check
  CHECK (kind IN ('dsn', 'arf', 'other', 'postmaster'));
