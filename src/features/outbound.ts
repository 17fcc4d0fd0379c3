// The outbound feature: the delivery loop as a component (claims, MX, SMTP, DKIM, retries, test-mode
// simulation).
import type { FeatureFactory } from './feature.js';
import { createOutbound } from '../outbound/index.js';

export const feature: FeatureFactory = (ctx) => {
  const loop = createOutbound(ctx);
  return { components: [loop] };
};
