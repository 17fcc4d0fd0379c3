// Turns what one attempt learned about a recipient (a Verdict) into the RecipientOutcome that
// applyOutcomes records: event data (decisions.md names), classification, retry time or expiry. Pure.
import { classifyReply, parseReplyLine, type ReplyInput } from '../core/classify.js';
import { mailboxProvider, registryReason } from '../core/providers/index.js';
import { retryDelayMs, expired, type RetryPolicy } from '../core/retry.js';
import type { RecipientOutcome } from '../services/transition.js';
import type { Verdict } from './verdict.js';

export { verdictOfReply, type Verdict } from './verdict.js';

export interface AttemptInfo {
  mx_host?: string;
  remote_ip?: string;
  source_ip?: string;
  tls_version?: string | null;
  tls_cipher?: string | null;
  /** the attempt's TLS outcome (operations.md "Transport security") */
  tls?: AttemptTls;
  duration_ms: number;
  source: 'smtp' | 'simulated';
}
export interface AttemptTls {
  version: string | null;
  cipher: string | null;
  verified: boolean;
  policy: 'dane' | 'mta-sts' | 'opportunistic' | 'none';
  /** MTA-STS `testing`: what an enforced policy would have refused; DANE: why the host's records were not met */
  failure?: string;
  /** the RFC 8460 result type of a failure (TLS-RPT counts them) */
  result_type?: string;
}
export interface Attempted {
  id: number;
  attempts: number;
  first_attempt_at: number | null;
}

function replyData(reply: string | null) {
  if (!reply) return {};
  const p = parseReplyLine(reply);
  return { smtp_code: p.code, enhanced_status: p.enhanced, smtp_response: p.text };
}

/**
 * A live reply's reason and hard flag, read as a bounce notice's reply is: the provider registry first, the MX host
 * that answered standing for a notice's Remote-MTA (Outlook's "451 4.7.500 Server busy" is its throttling, Google's
 * "account ... is inactive" its suspension), then the generic reading; a registry's bare `rejected` gives way to it.
 */
export function readReply(reply: string | ReplyInput, command: string | null | undefined, mxHost?: string | null) {
  const p = typeof reply === 'string' ? parseReplyLine(reply) : reply;
  const known = registryReason({
    text: p.text,
    status: p.enhanced ?? null,
    replycode: p.code === null ? null : String(p.code),
    command: command ?? 'RCPT',
    rhost: mxHost ?? null,
  });
  // Sisimai's catch-all `rejected` (Yahoo's table gives it to all its [TSxx] codes) says less than the reply's own
  // reading (badreputation, blocked, securityerror): then the reply decides, as before the registry was asked here.
  return classifyReply({ ...p, command, reason: known === 'rejected' ? null : known });
}

function withoutEmpty(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** The outcome to record for a recipient, at time `now`, with a random draw for retry jitter. */
export function toOutcome(
  d: Attempted,
  v: Verdict,
  info: AttemptInfo,
  policy: RetryPolicy,
  now: number,
  random: number,
): RecipientOutcome {
  const attempt = d.attempts + 1;
  const base = withoutEmpty({ attempt, ...info });
  switch (v.kind) {
    case 'accepted':
      return { deliveryId: d.id, event: 'accepted', data: { ...base, ...replyData(v.reply) } };
    case 'failed':
      return {
        deliveryId: d.id,
        event: 'failed',
        data: { attempt, source: info.source, error: v.error, message: v.message },
      };
    case 'dns_hard':
      return {
        deliveryId: d.id,
        event: 'rejected',
        // invalid_mx is the domain's fault, not the address's: not hard (never suppressed)
        data: {
          ...base,
          enhanced_status: v.enhanced,
          smtp_response: v.text,
          reason: v.reason,
          hard: v.reason !== 'invalid_mx',
        },
      };
    case 'rejected': {
      const p = parseReplyLine(v.reply);
      const c = readReply(p, v.command, info.mx_host);
      return {
        deliveryId: d.id,
        event: 'rejected',
        // The mailbox provider that refused (by its MX host, else a sign in the reply), like DSN bounces carry.
        data: {
          ...base,
          ...replyData(v.reply),
          reason: c.reason,
          hard: c.hard === true,
          provider: mailboxProvider({ rhost: info.mx_host, text: p.text }),
        },
      };
    }
    case 'deferred':
      return deferral(d, v, base, policy, now, random, info.mx_host);
  }
}

function deferral(
  d: Attempted,
  v: Extract<Verdict, { kind: 'deferred' }>,
  base: Record<string, unknown>,
  policy: RetryPolicy,
  now: number,
  random: number,
  mxHost?: string,
): RecipientOutcome {
  const p = v.reply ? parseReplyLine(v.reply) : null;
  const reason = v.reason ?? (p && p.code !== null ? readReply(p, v.command, mxHost).reason : 'networkerror');
  const data = withoutEmpty({
    ...base,
    ...replyData(v.reply),
    ...(v.enhanced ? { enhanced_status: v.enhanced } : {}),
    smtp_response: p ? p.text : v.error,
    reason,
    hard: false,
  });
  const nextAttemptAt = now + retryDelayMs(policy, d.attempts + 1, random);
  if (expired(policy, d.first_attempt_at ?? now, nextAttemptAt)) {
    return {
      deliveryId: d.id,
      event: 'expired',
      data: { ...data, reason: 'expired', hard: false, enhanced_status: '4.4.7', last_reason: reason },
    };
  }
  return { deliveryId: d.id, event: 'deferred', data, nextAttemptAt };
}
