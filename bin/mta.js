#!/usr/bin/env node
// The `mta` executable. Runs the precompiled bundle dist/mta.mjs (`npm run build`, made by `npm ci`) while it is
// newer than every source file it was built from (dist/inputs.json); otherwise, or with MTA_FROM_SOURCE=1, registers
// the TypeScript loader (tsx) and runs src/cli.ts. An edited source file is never shadowed by an older bundle.
import { bundleStaleness } from './bundle.js';

const stale = process.env.MTA_FROM_SOURCE === '1' ? 'MTA_FROM_SOURCE=1' : bundleStaleness();
if (stale === null) {
  await import(new URL('../dist/mta.mjs', import.meta.url).href);
} else {
  // `mta serve` warns at start when a bundle is there but older than a source (src/main.ts): the sources through tsx
  // cost ~30-40 MiB more resident memory (its loader thread, compiled sources and source maps).
  globalThis.mtaFromSource = stale;
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
