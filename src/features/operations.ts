// The operations feature: Prometheus metrics at /metrics, the operator API under /admin/v1 (off unless
// MTA_ADMIN_TOKEN is set), the hourly retention job, the sending-IP health check and (MTA_TLSRPT=on) TLS reports.
import type { FeatureFactory } from './feature.js';
import { createMetrics } from '../http/metrics.js';
import { retentionJob } from '../jobs/retention.js';
import { ipCheckJob } from '../jobs/ip-checks.js';
import { tlsReportJob } from '../jobs/tls-reports.js';
import { adminMount } from '../http/admin/index.js';

export const feature: FeatureFactory = (ctx) => {
  const metrics = createMetrics(ctx);
  return {
    mounts: [metrics.mount, adminMount],
    components: [retentionJob(ctx), ipCheckJob(ctx), ...(ctx.config.tlsrpt === 'on' ? [tlsReportJob(ctx)] : [])],
  };
};
