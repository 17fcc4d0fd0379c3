// What every use-case needs: the store, the configuration, a clock and a logger (and the report parser,
// which the inbound adapter owns). Built once by service.ts (or a test) and passed in; nothing here reads globals.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { DB } from '../store/db.js';
import type { ReportParser } from '../core/report.js';

export interface Ctx {
  db: DB;
  config: Config;
  /** Current time in ms; tests inject a controllable clock. */
  now: () => number;
  log: Logger;
  /** Reads an inbound report (inbound/parse.ts, wired by service.ts); recordFeedback's default parser. */
  parseReport?: ReportParser;
}
