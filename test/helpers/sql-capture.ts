// Records every distinct SQL text the tests prepare or exec on SQLite (better-sqlite3), for scripts/pg-sql-check.ts.
// Does nothing unless MTA_SQL_CAPTURE_DIR names a folder; each process writes <pid>.json there on exit.
//   MTA_SQL_CAPTURE_DIR=/tmp/sqlcap npx mocha --require test/helpers/sql-capture.ts 'test/**/*.test.ts'
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

const dir = process.env.MTA_SQL_CAPTURE_DIR;
if (dir) {
  fs.mkdirSync(dir, { recursive: true });
  const seen = new Set<string>();
  const proto = Database.prototype as unknown as Record<'prepare' | 'exec', (this: unknown, text: string) => unknown>;
  const prepare = proto.prepare;
  const exec = proto.exec;
  proto.prepare = function (text: string) {
    seen.add(text);
    return prepare.call(this, text);
  };
  proto.exec = function (text: string) {
    seen.add(text);
    return exec.call(this, text);
  };
  process.on('exit', () => fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify([...seen])));
}
