-- PostgreSQL 15 translation of migrations/012_queue_control.sql (INTEGER -> BIGINT; the partial indexes' WHERE
-- status IN (…) as is). No semantic difference.
-- Queue control (operations.md "Queue control"): an operator hold on a recipient (held_at; a held recipient
-- has next_attempt_at NULL, so the due index never offers it) and two partial indexes over the waiting
-- recipients only (not final), so `mta queue list|summary` and the bulk actions never scan delivered mail.
ALTER TABLE deliveries ADD COLUMN held_at BIGINT;
CREATE INDEX deliveries_waiting ON deliveries (email_seq) WHERE status IN ('queued', 'sent', 'delivery_delayed');
CREATE INDEX deliveries_waiting_domain ON deliveries (domain, email_seq) WHERE status IN ('queued', 'sent', 'delivery_delayed');
