// The outbound feature: routes, mounts and components it adds to the service (see service.ts Feature).
// Placeholder until the feature lands.
import type { FeatureFactory } from '../service.js';

export const feature: FeatureFactory = () => ({});
