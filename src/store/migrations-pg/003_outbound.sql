-- PostgreSQL 15 translation of migrations/003_outbound.sql (INTEGER -> BIGINT; no semantic difference).
-- Outbound delivery leases: a delivery claimed by the delivery loop carries the end of its lease
-- (also copied into next_attempt_at, so a crashed process's claims come due again when it ends).
-- While leased_until lies ahead the email is in flight: cancel refuses it (never sent after cancel).
ALTER TABLE deliveries ADD COLUMN leased_until BIGINT;
