// The features the full service runs. Each module builds its routes, mounts and components
// from the shared context; the order is the start order (stop runs in reverse).
import type { FeatureFactory } from './features/feature.js';
import { feature as domains } from './features/domains.js';
import { feature as webhooks } from './features/webhooks.js';
import { feature as outbound } from './features/outbound.js';
import { feature as inbound } from './features/inbound.js';
import { feature as submission } from './features/submission.js';
import { feature as dashboard } from './features/dashboard.js';
import { feature as operations } from './features/operations.js';

export const FEATURES: FeatureFactory[] = [operations, domains, webhooks, outbound, inbound, submission, dashboard];
