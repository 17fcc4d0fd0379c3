// An esbuild plugin shared by the outbound worker's two bundles (scripts/build.mjs ahead of time, signer.ts at run
// time from source): mailauth's tools.js loads Joi and tldts for DKIM *verification* (public-key checks, alignment),
// which the worker never does, so the bundle gets an inert stand-in for both (~10 MiB less per worker). Signing is
// covered by a test that verifies the worker's signatures. Plain JavaScript so that the build script runs with node.
export const verifyOnly = {
  name: 'verify-only',
  setup(b) {
    b.onResolve({ filter: /^(joi|tldts)$/ }, (a) => ({ path: a.path, namespace: 'verify-only' }));
    b.onLoad({ filter: /.*/, namespace: 'verify-only' }, () => ({
      contents: 'const p = new Proxy(function () {}, { get: () => p, apply: () => p }); module.exports = p;',
      loader: 'js',
    }));
  },
};
