// `npm run bench`: prints the service's throughput figures (API accept rate, SMTP submissions/s, delivery rate);
// `npm run bench -- delivery --postfix` also measures Postfix + opendkim side by side (takes over /etc/postfix);
// `npm run bench -- mta-sts`: delivery with a cached MTA-STS enforce policy vs MTA_MTA_STS=off, same TLS sink, in pairs.
// Figures, not pass/fail: record them in BENCHMARKS.md.
import fs from 'node:fs';
import { benchApi } from './bench-api.js';
import { benchSubmission } from './bench-submission.js';
import { hostSpeed, delayProxyStats } from './bench-lib.js';

const which = process.argv[2] ?? 'all';
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
console.log(
  `node ${process.version}, ${(await import('node:os')).cpus().length} cpus; host speed ${hostSpeed()} (best/median; 1.00: this VM in a fast spell)`,
);
if (which === 'all' || which === 'api') await benchApi({ seconds });
if (which === 'all' || which === 'submission') await benchSubmission({ seconds });
if (which === 'purge') await (await import('./bench-purge.js')).benchPurge();
if (which === 'lists') await (await import('./bench-lists.js')).benchLists();
if (which === 'summary') (await import('./bench-summary.js')).benchSummary();
if (which === 'receiving') await (await import('./bench-receiving.js')).benchReceiving({ seconds });
if (which === 'dmarc') await (await import('./bench-dmarc.js')).benchDmarc();
if (which === 'loopwork') await (await import('./bench-loopwork.js')).benchLoopWork();
if (which === 'bodies') await (await import('./bench-bodies.js')).benchBodies();
if (which === 'mta-sts') await (await import('./bench-delivery.js')).benchMtaSts();
if (which === 'nodes') await (await import('./bench-nodes.js')).benchNodes();
if ((which === 'all' || which === 'delivery') && fs.existsSync(new URL('./bench-delivery.ts', import.meta.url))) {
  const mod = await import('./bench-delivery.js' as string);
  await (mod.benchDelivery ?? mod.default)?.({
    postfix: process.argv.includes('--postfix'),
    only: process.env.BENCH_ONLY,
  });
}
const proxyStats = await delayProxyStats();
if (proxyStats) console.log(proxyStats);
console.log(`host speed at the end ${hostSpeed()}`);
