// The rate limiter of the HTTP side is the one of core/rate-limit (shared with SMTP submission through
// services/rate-limits); re-exported here for the HTTP middleware and the dashboard.
export * from '../core/rate-limit.js';
