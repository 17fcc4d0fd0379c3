// Loaded first in every mocha process (.mocharc.json `require`). Test services run the sources in-process (tsx), so
// each one's outbound worker would be bundled by esbuild when it starts (src/outbound/signer.ts): ~0.45 CPU-s per
// service (esbuild's own process included), measured in session 20, for a few hundred services per engine. While the
// bundle is fresh (dist/ newer than every source it was built from: bin/bundle.js, as `mta serve` children decide),
// the tests start that worker from dist/sign-worker.cjs instead, the same code built the same way
// (src/outbound/worker-build.mjs) once; test/unit/signer.test.ts still covers the bundling at start. With a stale
// or absent bundle (sources edited since `npm run build`) nothing changes. MTA_PREBUILT_WORKER=0 turns it off.
// The same switch starts the report parser's workers (src/inbound/parse-pool.ts) from dist/parse-worker.mjs instead of
// registering tsx in each worker thread (~1.2 CPU-s and a second of wall time per start, against ~0.4; session 21);
// test/unit/parse-pool.test.ts still covers the start from source.
import { bundleStaleness } from '../../bin/bundle.js';

if (process.env.MTA_PREBUILT_WORKER === undefined && bundleStaleness() === null) process.env.MTA_PREBUILT_WORKER = '1';
