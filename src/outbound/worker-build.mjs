// How the outbound worker's code is bundled, shared by its two builds (scripts/build.mjs ahead of time into
// dist/sign-worker.cjs, signer.ts at run time when the service runs from source): sign-worker.ts and the little it
// imports, one CommonJS script, so the thread starts without a TypeScript loader. mailauth's tools.js loads Joi and
// tldts for DKIM *verification* (public-key checks, alignment), which the worker never does, so the bundle gets an
// inert stand-in for both (~10 MiB less per worker; signing is covered by a test that verifies the worker's
// signatures). Plain JavaScript so that the build script runs with node alone.
import { fileURLToPath } from 'node:url';

const verifyOnly = {
  name: 'verify-only',
  setup(b) {
    b.onResolve({ filter: /^(joi|tldts)$/ }, (a) => ({ path: a.path, namespace: 'verify-only' }));
    b.onLoad({ filter: /.*/, namespace: 'verify-only' }, () => ({
      contents: 'const p = new Proxy(function () {}, { get: () => p, apply: () => p }); module.exports = p;',
      loader: 'js',
    }));
  },
};

/** esbuild options of the worker's bundle (add outfile or write: false). */
export const workerBuild = {
  entryPoints: [fileURLToPath(new URL('./sign-worker.ts', import.meta.url))],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  plugins: [verifyOnly],
};
