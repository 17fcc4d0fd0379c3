// The dashboard feature: the /dashboard mount (server-rendered pages, session sign-in with an API key
// or the operator password), reading and changing data only through the same services as the API.
import type { FeatureFactory } from './feature.js';
import { dashboardMount } from '../http/dashboard/index.js';

export const feature: FeatureFactory = () => ({ mounts: [dashboardMount] });
