// The list of features the full service runs (delivery loop, inbound listener, webhooks, domains,
// jobs, dashboard). Each entry builds its routes and components from the shared context.
import type { FeatureFactory } from './service.js';

export const FEATURES: FeatureFactory[] = [];
