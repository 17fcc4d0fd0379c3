// The domains feature: the /v1/domains routes and the scheduled DNS re-check of every domain.
// Status changes are announced through services/domain-checks.ts onDomainStatusChange.
import type { FeatureFactory } from './feature.js';
import { domainRoutes } from '../http/routes/domains.js';
import { domainCheckJob } from '../jobs/domain-checks.js';

export const feature: FeatureFactory = (ctx) => ({
  routes: [domainRoutes],
  components: [domainCheckJob(ctx)],
});
