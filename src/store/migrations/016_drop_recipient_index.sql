-- No query looks deliveries up by recipient (bounces and complaints find their delivery by VERP token or
-- Message-ID, then compare addresses in code; the queue filters name teams, sites, domains, tags and emails).
-- The index cost every accepted recipient an insert at a random place of a B-tree keyed by address: with
-- random addresses, a page of its own in each commit's WAL and, once the table outgrows the page cache, a read.
DROP INDEX IF EXISTS deliveries_recipient;
