// What a feature contributes to the running service (the only way routes, mounts and components are
// added): built from the shared context by a FeatureFactory; service.ts collects them in order.
import type { RouteFn, MountFn } from '../http/deps.js';
import type { Component } from '../types/component.js';
import type { Ctx } from '../services/context.js';

export interface Feature {
  /** v1 routes, registered under /v1 in feature order. */
  routes?: RouteFn[];
  /** Non-versioned mounts, added in feature order. */
  mounts?: MountFn[];
  components?: Component[];
}
export type FeatureFactory = (ctx: Ctx) => Feature;
