// Composition root: load the configuration, start the service, drain on SIGTERM/SIGINT. One process serves the node
// (MTA_HTTP_WORKERS, the HTTP workers' setting, is accepted and ignored: config/check.ts).
import v8 from 'node:v8';
import { heapGrowingPercent, loadConfig } from './config/load.js';
import { checkBeforeStart } from './config/check.js';
import { createLogger } from './log.js';
import type { Logger } from 'pino';

/**
 * A process that dies says why: an exception or a promise rejection nothing handled is logged at fatal (with its
 * stack) before the process exits 1. Node's own report of it is a bare stack on stderr, outside the JSON log an
 * operator's collector reads.
 */
export function exitOnUncaught(log: Logger): void {
  let dying = false;
  const die = (what: string) => (err: unknown) => {
    if (dying) return;
    dying = true;
    log.fatal({ err }, `${what}: the process exits`);
    const exit = () => process.exit(1);
    setTimeout(exit, 1000); // whatever happens to the log's flush (the timer also keeps the process up until then)
    log.flush(exit);
  };
  process.on('uncaughtException', die('uncaught exception'));
  process.on('unhandledRejection', die('unhandled promise rejection'));
}

/**
 * The source file newer than the precompiled bundle when bin/mta.js fell back to the sources because of it (it tells
 * why in `globalThis.mtaFromSource`); null when the bundle runs, none was built, or MTA_FROM_SOURCE=1 asked for them.
 */
function staleBundle(): string | null {
  const why = (globalThis as { mtaFromSource?: string }).mtaFromSource;
  return why && why !== 'absent' && why !== 'MTA_FROM_SOURCE=1' ? why : null;
}

/**
 * The heaps' growing factor (MTA_HEAP_GROWING_PERCENT), set before the service is loaded: the full collection at the
 * end of start-up already uses it. V8 reads the flag at every full collection, in every thread of the process.
 */
function tuneHeap(): void {
  const percent = heapGrowingPercent();
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}

export async function main(configFile?: string): Promise<void> {
  const config = loadConfig({ file: configFile });
  tuneHeap();
  // The service and everything it starts are loaded once the settings are read: a refused one is told without
  // loading Koa, the SMTP libraries and the rest (the precompiled bundle keeps them in their own chunks).
  const { startService } = await import('./service.js');
  const warnings = checkBeforeStart(config);
  const log = createLogger(config.logLevel);
  exitOnUncaught(log);
  for (const w of warnings) log.warn(w);
  const stale = staleBundle();
  if (stale)
    log.warn(
      `dist/mta.mjs is older than ${stale}: running the sources through tsx, ~30-40 MiB more resident memory; npm run build`,
    );
  const svc = await startService(config, { log });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    svc.ctx.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    await svc.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // A renewed certificate: the SMTP listeners read their TLS files again; open sessions keep theirs.
  process.on('SIGHUP', () => {
    svc.ctx.log.info({ signal: 'SIGHUP' }, 'reloading TLS certificates');
    svc.reload();
  });
}
