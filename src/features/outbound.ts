// The outbound feature: the delivery loop as a component (claims, sites and shaping, MX, SMTP, DKIM, retries,
// test-mode simulation, delivery control); `ext.outbound` exposes it (wake, stats); its metrics join /metrics.
import type { FeatureFactory } from './feature.js';
import { createOutbound } from '../outbound/index.js';
import { addMetricsRegistry } from '../http/metrics.js';
import { onNudge } from '../services/nudges.js';

export const feature: FeatureFactory = (ctx) => {
  const loop = createOutbound(ctx);
  onNudge(ctx.db, 'delivery', () => loop.wake());
  if (loop.control) addMetricsRegistry(ctx.db, loop.control.registry);
  return { components: [loop], ext: { outbound: loop } };
};
