// The operations feature: Prometheus metrics at /metrics and the hourly retention job.
import type { FeatureFactory } from './feature.js';
import { createMetrics } from '../http/metrics.js';
import { retentionJob } from '../jobs/retention.js';

export const feature: FeatureFactory = (ctx) => {
  const metrics = createMetrics(ctx);
  return { mounts: [metrics.mount], components: [retentionJob(ctx)] };
};
