// Composition root: load the configuration, start the service, drain on SIGTERM/SIGINT.
import { loadConfig } from './config/load.js';
import { startService } from './service.js';

export async function main(configFile?: string): Promise<void> {
  const config = loadConfig({ file: configFile });
  const svc = await startService(config);
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
}
