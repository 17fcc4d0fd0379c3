// What one SMTP attempt says of one recipient (a Verdict) from the reply it got: small and pure, shared by the SMTP
// client (in the outbound worker thread too) and outcome.ts, which turns verdicts into recorded outcomes.
import { parseReplyLine } from '../core/classify.js';
import type { BounceReason } from '../core/bounce-reasons.js';

/** What happened to one recipient in one attempt. `reply` is the raw SMTP reply line, if any. */
export type Verdict =
  | { kind: 'accepted'; reply: string }
  | {
      kind: 'deferred';
      reply: string | null;
      command: string;
      error?: string;
      /** set when the attempt was refused here, not by a reply (`mta_sts`: the domain's policy was not met) */
      reason?: BounceReason;
      enhanced?: string;
    }
  | { kind: 'rejected'; reply: string; command: string }
  | { kind: 'dns_hard'; reason: 'hostunknown' | 'notaccept' | 'invalid_mx'; enhanced: string; text: string }
  | { kind: 'failed'; error: string; message: string };

/** A reply line's class: 2xx accepted, 4xx (or no valid reply) deferred, 5xx rejected. */
export function verdictOfReply(reply: string | null | undefined, command: string, error?: string): Verdict {
  const code = reply ? parseReplyLine(reply).code : null;
  if (reply && code !== null && code >= 500) return { kind: 'rejected', reply, command };
  if (reply && code !== null && code >= 200 && code < 300) return { kind: 'accepted', reply };
  return { kind: 'deferred', reply: reply ?? null, command, error };
}
