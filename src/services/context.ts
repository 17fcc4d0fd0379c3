// What every use-case needs: the store, the configuration, a clock and a logger.
// Built once by main.ts (or a test) and passed in; nothing here reads globals.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { DB } from '../store/db.js';

export interface Ctx {
  db: DB;
  config: Config;
  /** Current time in ms; tests inject a controllable clock. */
  now: () => number;
  log: Logger;
}
