// The outbound feature: the delivery loop as a component (claims, sites and shaping, MX, SMTP, DKIM, retries,
// test-mode simulation, delivery control); `ext.outbound` exposes it (wake, stats); its metrics join /metrics.
import type { FeatureFactory } from './feature.js';
import { createOutbound } from '../outbound/index.js';
import { addMetricsRegistry } from '../http/metrics.js';
import { onEvent, setIntake } from '../services/delivery.js';
import { afterWrites, isHttpWorker, onNudge } from '../services/siblings.js';

export const feature: FeatureFactory = (ctx) => {
  // An HTTP worker leases new recipients due now to the primary's loop and sends them after the commit
  // (http/cluster-intake.ts); it wakes that loop only for the rest (unleased: scheduled, no credit), which it claims.
  if (isHttpWorker(ctx)) {
    const intake = ctx.siblings!.intake;
    if (intake) setIntake(ctx.db, intake);
    const queued = new Set<number>();
    onEvent(ctx.db, (_db, ev) => {
      if (ev.type !== 'queued') return;
      // After the turn's commit, which handed the leased ones over.
      if (queued.size === 0)
        afterWrites(ctx.db, () => {
          const unleased = [...queued].filter((seq) => !intake?.handed(seq)).length;
          queued.clear();
          if (unleased) ctx.siblings!.nudge('delivery');
        });
      queued.add(ev.email_seq);
    });
    return {};
  }
  const loop = createOutbound(ctx);
  onNudge(ctx.db, 'delivery', () => loop.wake());
  if (loop.control) addMetricsRegistry(ctx.db, loop.control.registry);
  return { components: [loop], ext: { outbound: loop } };
};
