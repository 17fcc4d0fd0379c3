// What a route file or mount receives from the HTTP app: the shared context and the auth middleware.
// Types only, so route files and the app do not import each other.
import type Router from '@koa/router';
import type Koa from 'koa';
import type { auth, State } from './middleware.js';
import type { Ctx } from '../services/context.js';

export interface Deps {
  app: Ctx;
  auth: ReturnType<typeof auth>;
}
/** Registers routes on the /v1 router. */
export type RouteFn = (r: Router, deps: Deps) => void;
/** Non-versioned mounts (docs, metrics, dashboard, tracking). */
export type MountFn = (koa: Koa<State>, deps: Deps) => void;
