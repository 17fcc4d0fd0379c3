// The outbound feature: the delivery loop as a component (claims, sites and shaping, MX, SMTP, DKIM, retries,
// test-mode simulation, delivery control); `ext.outbound` exposes it (wake, stats); its metrics join /metrics.
import type { FeatureFactory } from './feature.js';
import { createOutbound } from '../outbound/index.js';
import { addMetricsRegistry } from '../http/metrics.js';
import { onEvent } from '../services/delivery.js';
import { isHttpWorker, onNudge } from '../services/siblings.js';

export const feature: FeatureFactory = (ctx) => {
  // An HTTP worker inserts new recipients unleased and wakes the primary's loop, which claims them.
  if (isHttpWorker(ctx)) {
    onEvent(ctx.db, (_db, ev) => {
      if (ev.type === 'queued') ctx.siblings!.nudge('delivery');
    });
    return {};
  }
  const loop = createOutbound(ctx);
  onNudge(ctx.db, 'delivery', () => loop.wake());
  if (loop.control) addMetricsRegistry(ctx.db, loop.control.registry);
  return { components: [loop], ext: { outbound: loop } };
};
