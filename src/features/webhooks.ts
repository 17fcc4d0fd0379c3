// The webhooks feature: /v1/webhooks routes, the public tracking mount, the outbox dispatcher, and
// the onEvent listener that writes outbox rows inside every event's transaction.
import type { FeatureFactory } from './feature.js';
import { onEventPlan } from '../store/events.js';
import { createResolver } from '../services/resolver.js';
import { enqueueEvent } from '../services/webhooks.js';
import { Dispatcher } from '../webhooks/dispatcher.js';
import { webhookRoutes } from '../http/routes/webhooks.js';
import { trackingMount } from '../http/tracking.js';
import { afterWrites, onNudge } from '../services/nudges.js';

export const feature: FeatureFactory = (ctx) => {
  const resolver = createResolver(ctx.config);
  const dispatcher = new Dispatcher(ctx, resolver);
  // Woken once the rows are committed: a group-commit turn on the pool (MTA_PG_POOLED_TURNS) commits on a connection
  // the dispatcher does not see in a transaction.
  const notify = () => dispatcher.notify();
  onEventPlan(ctx.db, function* (db, ev, email) {
    if ((yield* enqueueEvent(ctx, db, ev, email)) > 0) afterWrites(ctx.db, notify);
  });
  onNudge(ctx.db, 'webhooks', () => dispatcher.notify());
  return { routes: [webhookRoutes(resolver)], mounts: [trackingMount], components: [dispatcher] };
};
