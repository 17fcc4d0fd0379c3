-- PostgreSQL 15 translation of migrations/033_tls_reports.sql (INTEGER -> BIGINT, WITHOUT ROWID dropped), plus the
-- per-transaction delta table the store appends to (store/tls-reports.ts bumpTlsCount), folded at COMMIT in key order
-- by a deferred constraint trigger, as site_stats_hourly's are (027): concurrent result writers never wait on a
-- counter row's lock for the rest of their transaction.
CREATE TABLE tls_report_counts (
  domain TEXT NOT NULL,
  day BIGINT NOT NULL,
  policy_type TEXT NOT NULL,
  policy TEXT NOT NULL,
  result_type TEXT NOT NULL,
  mx_host TEXT NOT NULL,
  receiving_ip TEXT NOT NULL,
  sending_ip TEXT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip)
);
CREATE INDEX tls_report_counts_day ON tls_report_counts (day);
CREATE TABLE tls_reports_sent (
  domain TEXT NOT NULL,
  day BIGINT NOT NULL,
  sent_at BIGINT NOT NULL,
  rua TEXT NOT NULL,
  PRIMARY KEY (domain, day)
);
CREATE UNLOGGED TABLE tls_report_counts_delta (
  xact xid8 NOT NULL DEFAULT pg_current_xact_id(),
  domain TEXT NOT NULL,
  day BIGINT NOT NULL,
  policy_type TEXT NOT NULL,
  policy TEXT NOT NULL,
  result_type TEXT NOT NULL,
  mx_host TEXT NOT NULL,
  receiving_ip TEXT NOT NULL,
  sending_ip TEXT NOT NULL,
  n BIGINT NOT NULL
);
CREATE INDEX tls_report_counts_delta_xact ON tls_report_counts_delta (xact);

CREATE FUNCTION tls_report_counts_fold() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  r record;
BEGIN
  -- Called once per delta row at COMMIT: the first call folds them all, the others return at once.
  IF current_setting('mta.tls_counts_folded', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('mta.tls_counts_folded', 'on', true);
  FOR r IN
    WITH d AS (DELETE FROM tls_report_counts_delta WHERE xact = pg_current_xact_id() RETURNING *)
    SELECT domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip, sum(n) AS n FROM d
    GROUP BY domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip
    ORDER BY domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip
  LOOP
    INSERT INTO tls_report_counts AS t (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip, n)
    VALUES (r.domain, r.day, r.policy_type, r.policy, r.result_type, r.mx_host, r.receiving_ip, r.sending_ip, r.n)
    ON CONFLICT (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip)
    DO UPDATE SET n = t.n + excluded.n;
  END LOOP;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER tls_report_counts_fold AFTER INSERT ON tls_report_counts_delta DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION tls_report_counts_fold();
