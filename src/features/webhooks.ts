// The webhooks feature: /v1/webhooks routes, the public tracking mount, the outbox dispatcher, and
// the onEvent listener that writes outbox rows inside every event's transaction.
import type { FeatureFactory } from './feature.js';
import { onEvent } from '../store/events.js';
import { whenCommitted } from '../store/group-commit.js';
import { createResolver } from '../services/resolver.js';
import { enqueueEvent } from '../services/webhooks.js';
import { Dispatcher } from '../webhooks/dispatcher.js';
import { webhookRoutes } from '../http/routes/webhooks.js';
import { trackingMount } from '../http/tracking.js';

export const feature: FeatureFactory = (ctx) => {
  const resolver = createResolver(ctx.config);
  const dispatcher = new Dispatcher(ctx, resolver);
  // PostgreSQL: a group-commit turn commits after this turn of the event loop (its COMMIT answered later, and the
  // dispatcher claims on the other connection), so it is told once that answer is in.
  const notify = () => dispatcher.notify();
  onEvent(ctx.db, (db, ev) => {
    if (enqueueEvent(ctx, db, ev) > 0 && !whenCommitted(db, notify)) notify();
  });
  return { routes: [webhookRoutes(resolver)], mounts: [trackingMount], components: [dispatcher] };
};
