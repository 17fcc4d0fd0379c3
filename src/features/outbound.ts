// The outbound feature: the delivery loop as a component (claims, MX, SMTP, DKIM, retries, test-mode
// simulation); `ext.outbound` exposes it (wake, stats) to other features.
import type { FeatureFactory } from '../service.js';
import { createOutbound } from '../outbound/index.js';

export const feature: FeatureFactory = (ctx) => {
  const loop = createOutbound(ctx);
  return { components: [loop], ext: { outbound: loop } };
};
