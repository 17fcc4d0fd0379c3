#!/usr/bin/env node
// The `mta` executable. Runs the precompiled bundle dist/mta.mjs (`npm run build`, made by `npm ci`) while it is
// newer than every source file it was built from (dist/inputs.json); otherwise, or with MTA_FROM_SOURCE=1, registers
// the TypeScript loader (tsx) and runs src/cli.ts. An edited source file is never shadowed by an older bundle.
import fs from 'node:fs';

const at = (p) => new URL(`../${p}`, import.meta.url);

function bundleIsFresh() {
  try {
    const built = fs.statSync(at('dist/mta.mjs')).mtimeMs;
    const inputs = JSON.parse(fs.readFileSync(at('dist/inputs.json'), 'utf8'));
    return inputs.length > 0 && inputs.every((f) => fs.statSync(at(f)).mtimeMs <= built);
  } catch {
    return false; // no bundle, or a source file gone
  }
}

if (process.env.MTA_FROM_SOURCE !== '1' && bundleIsFresh()) {
  await import(at('dist/mta.mjs').href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
