// Whether the precompiled bundle (dist/mta.mjs, `npm run build`) may run: it must be newer than every source file it
// was built from (dist/inputs.json). Used by bin/mta.js and by the benches (scripts/bench-lib.ts builds a stale one
// first, so they measure what operators run).
import fs from 'node:fs';

/**
 * null while dist/mta.mjs is fresh; otherwise why it may not run: 'absent' (no bundle, or no list of its inputs) or
 * the first source file newer than it (or gone since), relative to the checkout. `root`: the checkout's URL (a
 * folder, ending in /), this one by default.
 */
export function bundleStaleness(root = new URL('../', import.meta.url)) {
  const at = (p) => new URL(p, root);
  let built;
  let inputs;
  try {
    built = fs.statSync(at('dist/mta.mjs')).mtimeMs;
    inputs = JSON.parse(fs.readFileSync(at('dist/inputs.json'), 'utf8'));
  } catch {
    return 'absent';
  }
  if (inputs.length === 0) return 'absent';
  for (const f of inputs) {
    try {
      if (fs.statSync(at(f)).mtimeMs > built) return f;
    } catch {
      return f; // a source file gone
    }
  }
  return null;
}
