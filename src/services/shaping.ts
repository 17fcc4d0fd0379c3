// The shaping rules in force: config/shaping.json merged with the operator file (MTA_SHAPING_FILE), read
// once per process; a missing or invalid file is a ConfigError naming it (the service refuses to start).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../config/load.js';
import { loadShaping, ShapingError, type Shaping } from '../core/shaping/rules.js';
import type { Config } from '../config/schema.js';

const BUILT_IN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config/shaping.json');
const cache = new Map<string, Shaping>();

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${what} ${file}: ${(err as Error).message}`);
  }
}

/** The merged rules for this configuration (cached by operator file name). */
export function shapingFor(config: Pick<Config, 'shapingFile'>): Shaping {
  const key = config.shapingFile ?? '';
  const hit = cache.get(key);
  if (hit) return hit;
  const op = config.shapingFile ? readJson(config.shapingFile, 'shapingFile (MTA_SHAPING_FILE)') : undefined;
  try {
    const s = loadShaping(readJson(BUILT_IN, 'built-in shaping file'), op);
    cache.set(key, s);
    return s;
  } catch (err) {
    if (err instanceof ShapingError)
      throw new ConfigError(`invalid configuration: shapingFile (MTA_SHAPING_FILE): ${err.message}`);
    throw err;
  }
}
