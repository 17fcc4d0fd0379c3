-- PostgreSQL 15 translation of migrations/026_dmarc_summary_index.sql (the same key columns, so the schemas match).
-- The DMARC summary (GET /v1/domains/{id}/dmarc, store/dmarc.ts dmarcSources) sums the records of a domain's
-- reports per source IP: an index on report_seq holding every column it reads, so the 10^5 records of a busy week
-- can be read from the index alone, not from the rows with their auth_json. It replaces the index on report_seq
-- alone (the report's records, the cascade on delete).
CREATE INDEX dmarc_records_summary
  ON dmarc_records (report_seq, source_ip, count, dmarc_pass, dkim_aligned, spf_aligned, disposition);
DROP INDEX dmarc_records_report;
