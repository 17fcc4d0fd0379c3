// The domains table (migrations 001/002): one row per team and domain name, holding the DKIM key
// pair, the return-path name and the last check's per-record results (records_json).
import { sql, type DB } from './db.js';
import type { DomainStatus } from '../core/domain-records.js';

export interface DomainRow {
  seq: number; id: string; team_id: string; name: string; status: DomainStatus;
  created_at: number; last_checked_at: number | null;
  dkim_selector: string; dkim_algorithm: string; dkim_private_key: string; dkim_public_key: string;
  return_path: string | null; return_path_verified: number; records_json: string | null; last_error: string | null;
}

const COLS = 'rowid AS seq, id, team_id, name, status, created_at, last_checked_at, dkim_selector, dkim_algorithm, dkim_private_key, dkim_public_key, return_path, return_path_verified, records_json, last_error';

export function insertDomain(db: DB, d: Omit<DomainRow, 'seq' | 'last_checked_at' | 'return_path_verified' | 'last_error' | 'status'>): void {
  sql(db, `INSERT INTO domains (id, team_id, name, status, created_at, dkim_selector, dkim_algorithm, dkim_private_key, dkim_public_key, return_path, records_json)
    VALUES (@id, @team_id, @name, 'pending', @created_at, @dkim_selector, @dkim_algorithm, @dkim_private_key, @dkim_public_key, @return_path, @records_json)`).run(d);
}

export function domainById(db: DB, id: string): DomainRow | undefined {
  return sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE id = ?`).get(id);
}

export function domainByName(db: DB, teamId: string, name: string): DomainRow | undefined {
  return sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE team_id = ? AND name = ?`).get(teamId, name);
}

export function domainsNamed(db: DB, name: string): DomainRow[] {
  return sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE name = ? ORDER BY rowid`).all(name);
}

/** Newest first; `before` is the seq of the last row of the previous page. Fetches limit + 1 rows. */
export function listDomains(db: DB, teamId: string, before: number | null, limit: number): DomainRow[] {
  return sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE team_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?`).all(teamId, before ?? Number.MAX_SAFE_INTEGER, limit + 1);
}

/** Ids of every domain, for the scheduled re-check. */
export function allDomainIds(db: DB): string[] {
  return sql<{ id: string }>(db, 'SELECT id FROM domains ORDER BY rowid').all().map((r) => r.id);
}

export interface CheckWrite { id: string; status: DomainStatus; records_json: string; return_path_verified: number; last_error: string | null; last_checked_at: number }

export function writeCheck(db: DB, w: CheckWrite): boolean {
  return sql(db, 'UPDATE domains SET status = @status, records_json = @records_json, return_path_verified = @return_path_verified, last_error = @last_error, last_checked_at = @last_checked_at WHERE id = @id').run(w).changes === 1;
}

export function deleteDomain(db: DB, id: string): boolean {
  return sql(db, 'DELETE FROM domains WHERE id = ?').run(id).changes === 1;
}
