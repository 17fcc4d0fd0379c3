// The API feature, always on (service.ts puts it first, whatever features are chosen): /v1/emails,
// /v1/suppressions, /v1/credits, /v1/api-keys, /v1/stats, /v1/inbound, /v1/openapi.json and the API reference under /docs.
import type { FeatureFactory } from './feature.js';
import { emailRoutes } from '../http/routes/emails.js';
import { accountRoutes } from '../http/routes/account.js';
import { statsRoutes } from '../http/routes/stats.js';
import { inboundRoutes } from '../http/routes/inbound.js';
import { docsMount } from '../http/docs.js';
import { openApiRoutes } from '../http/openapi.js';

export const feature: FeatureFactory = () => ({
  routes: [emailRoutes, accountRoutes, statsRoutes, inboundRoutes, openApiRoutes],
  mounts: [docsMount],
});
