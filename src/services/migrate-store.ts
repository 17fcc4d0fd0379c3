// `mta migrate-to-postgres` (issue 15, docs/operations.md "Moving from SQLite to PostgreSQL"): copies the SQLite
// store of a data folder into an empty PostgreSQL database. Refuses (MigrateRefused, nothing written) unless the
// PostgreSQL database holds no rows and both stores are at the same set of migrations; otherwise copies every table
// in one PostgreSQL transaction (store/copy.ts) and reports the rows per table.
import { openDb } from '../store/db.js';
import {
  copySqliteToPg,
  nonEmptyPgTables,
  openSqliteReadOnly,
  pgMigrationVersions,
  pgTablesInFkOrder,
  schemaDifferences,
  sqliteMigrationVersions,
  type CopyProgress,
} from '../store/copy.js';

/** The copy was refused before anything was written: the message says why and what to do. */
export class MigrateRefused extends Error {}

export interface MigrateResult {
  tables: CopyProgress[];
  total: number;
  ms: number;
}

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, '//');

/** Versions as short text: 1-14, or a list when there are gaps. */
function versions(v: number[]): string {
  if (v.length === 0) return 'none';
  const contiguous = v.every((x, i) => i === 0 || x === v[i - 1] + 1);
  return contiguous && v.length > 2 ? `${v[0]}-${v[v.length - 1]}` : v.join(', ');
}

export function migrateToPostgres(opts: {
  dataDir: string;
  databaseUrl: string;
  batch?: number;
  now?: () => number;
  onTable?: (p: CopyProgress) => void;
}): MigrateResult {
  const now = opts.now ?? Date.now;
  const batch = opts.batch ?? 1000;
  const src = openSqliteReadOnly(opts.dataDir);
  if (!src) throw new MigrateRefused(`no SQLite store in ${opts.dataDir} (MTA_DATA_DIR): nothing to copy`);
  try {
    const db = openDb(opts.dataDir, { databaseUrl: opts.databaseUrl });
    try {
      const lite = sqliteMigrationVersions(src);
      const pg = pgMigrationVersions(db);
      if (lite.join(',') !== pg.join(',')) {
        const older = lite.length === 0 || Math.max(...lite) < Math.max(...pg);
        throw new MigrateRefused(
          `the SQLite store is at migrations ${versions(lite)}, PostgreSQL at ${versions(pg)}: ` +
            (older
              ? 'start this version of `mta serve` once on the SQLite store (it applies the missing migrations), stop it, and run this again'
              : 'the SQLite store was written by a newer version of mta: run that version'),
        );
      }
      const tables = pgTablesInFkOrder(db);
      const diff = schemaDifferences(src, tables);
      if (diff.length) throw new MigrateRefused(`the two schemas differ: ${diff.join('; ')}`);
      const refuseUnlessEmpty = () => {
        const full = nonEmptyPgTables(db, tables);
        if (full.length)
          throw new MigrateRefused(
            `the PostgreSQL database ${redact(opts.databaseUrl)} is not empty (rows in ${full.join(', ')}): ` +
              'copy into a new, empty database',
          );
      };
      refuseUnlessEmpty(); // before the table locks: a quick answer
      const t0 = now();
      const done = copySqliteToPg(src, db, tables, { batch, check: refuseUnlessEmpty, onTable: opts.onTable });
      return { tables: done, total: done.reduce((s, t) => s + t.rows, 0), ms: now() - t0 };
    } finally {
      db.close();
    }
  } finally {
    src.close();
  }
}
