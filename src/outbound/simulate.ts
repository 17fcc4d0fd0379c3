// Test mode: the recipient's local part decides the simulated outcome (decisions.md "Test keys"):
// delivered@, bounced@ (hard userunknown), complained@ (delivered, then a complaint), delayed@
// (deferred once, delivered on the retry), anything else delivered. No connection is ever opened. Pure.
import type { RecipientOutcome } from '../services/transition.js';
import type { Attempted } from './outcome.js';

export const SIMULATED_RETRY_MS = 1000;

/** The outcomes (in order) for one test-mode recipient at `now`. */
export function simulate(d: Attempted & { recipient: string }, now: number): RecipientOutcome[] {
  const local = d.recipient.slice(0, d.recipient.lastIndexOf('@')).toLowerCase();
  const attempt = d.attempts + 1;
  const base = { attempt, mx_host: 'simulated', duration_ms: 0, source: 'simulated' };
  const ok = { ...base, smtp_code: 250, enhanced_status: '2.0.0', smtp_response: '250 2.0.0 OK (simulated)' };
  switch (local) {
    case 'bounced':
      return [
        {
          deliveryId: d.id,
          event: 'rejected',
          data: {
            ...base,
            smtp_code: 550,
            enhanced_status: '5.1.1',
            smtp_response: '550 5.1.1 The email account does not exist (simulated)',
            reason: 'userunknown',
            hard: true,
          },
        },
      ];
    case 'complained':
      return [
        { deliveryId: d.id, event: 'accepted', data: ok },
        { deliveryId: d.id, event: 'complaint', data: { attempt, reason: 'feedback', source: 'simulated' } },
      ];
    case 'delayed':
      if (d.attempts === 0) {
        const data = {
          ...base,
          smtp_code: 451,
          enhanced_status: '4.7.1',
          smtp_response: '451 4.7.1 Try again later (simulated)',
          reason: 'ratelimited',
          hard: false,
        };
        return [{ deliveryId: d.id, event: 'deferred', data, nextAttemptAt: now + SIMULATED_RETRY_MS }];
      }
      return [{ deliveryId: d.id, event: 'accepted', data: ok }];
    default:
      return [{ deliveryId: d.id, event: 'accepted', data: ok }];
  }
}
