// Bounce-reason vocabulary (Sisimai's names), hard/soft rule and Sisimai pseudo status codes.
// Pure data and tiny helpers: no I/O, imports nothing outside src/core.

export const BOUNCE_REASONS = [
  'userunknown',
  'hostunknown',
  'hasmoved',
  'notaccept',
  'mailboxfull',
  'exceedlimit',
  'mesgtoobig',
  'suspend',
  'filtered',
  'rejected',
  'blocked',
  'spamdetected',
  'virusdetected',
  'policyviolation',
  'authfailure',
  'requireptr',
  'securityerror',
  'failedstarttls',
  'badreputation',
  'speeding',
  'toomanyconn',
  'ratelimited',
  'norelaying',
  'notcompliantrfc',
  'contenterror',
  'syntaxerror',
  'systemerror',
  'systemfull',
  'networkerror',
  'mailererror',
  'expired',
  'onhold',
  'undefined',
  'feedback',
  'vacation',
  'delivered',
  // not Sisimai's: every address of every MX is one the outbound loop never connects to (decisions.md)
  'invalid_mx',
  // not Sisimai's: the recipient domain's MTA-STS policy (enforce) could not be met; a deferral (docs/outbound.md)
  'mta_sts',
  // not Sisimai's: DANE (RFC 7672) applies to the MX host and its TLSA records could not be met; a deferral
  'dane',
] as const;

export type BounceReason = (typeof BOUNCE_REASONS)[number];

/** Reasons that are not bounces at all: `hard` is null for them. */
export const NOT_BOUNCE: ReadonlySet<BounceReason> = new Set(['feedback', 'vacation', 'delivered']);

/** Reasons whose reading should be re-checked against the text (Sisimai 5.1.0's "retry" list, suspend included). */
export const RETRY_REASONS: ReadonlySet<string> = new Set([
  'undefined',
  'suspend',
  'onhold',
  'systemerror',
  'securityerror',
  'networkerror',
  'hostunknown',
  'userunknown',
  'expired',
]);

export function isBounceReason(value: string): value is BounceReason {
  return (BOUNCE_REASONS as readonly string[]).includes(value);
}

/** True when the reason is a definite reading (not empty, undefined or onhold). */
export function isExplicit(reason: string | null | undefined): boolean {
  return !!reason && reason !== 'undefined' && reason !== 'onhold';
}

/**
 * Hard bounce = the address itself is bad. notaccept is hard only when permanent
 * (5xx reply or 5.x.x status, or nothing says it is temporary).
 */
export function isHard(
  reason: BounceReason,
  replyCode?: number | string | null,
  status?: string | null,
): boolean | null {
  if (NOT_BOUNCE.has(reason)) return null;
  if (reason === 'userunknown' || reason === 'hostunknown' || reason === 'hasmoved') return true;
  if (reason !== 'notaccept') return false;
  const s = status ? String(status)[0] : '';
  const r = replyCode != null ? String(replyCode)[0] : '';
  if (s === '4' || (!s && r === '4')) return false;
  return true;
}

const PSEUDO_TEMPORARY: Partial<Record<BounceReason, string>> = {
  authfailure: '4.0.972',
  badreputation: '4.0.975',
  blocked: '4.0.971',
  contenterror: '4.0.960',
  expired: '4.0.947',
  filtered: '4.0.924',
  mailboxfull: '4.0.922',
  networkerror: '4.0.944',
  notaccept: '4.0.932',
  onhold: '4.0.901',
  rejected: '4.0.918',
  securityerror: '4.0.970',
  failedstarttls: '4.0.976',
  spamdetected: '4.0.980',
  speeding: '4.0.946',
  systemerror: '4.0.930',
  systemfull: '4.0.931',
  toomanyconn: '4.0.945',
  undefined: '4.0.900',
};

const PSEUDO_PERMANENT: Partial<Record<BounceReason, string>> = {
  authfailure: '5.0.972',
  badreputation: '5.0.975',
  blocked: '5.0.971',
  contenterror: '5.0.960',
  exceedlimit: '5.0.923',
  expired: '5.0.947',
  failedstarttls: '5.0.976',
  filtered: '5.0.910',
  hasmoved: '5.0.916',
  hostunknown: '5.0.912',
  mailboxfull: '5.0.922',
  mailererror: '5.0.939',
  mesgtoobig: '5.0.934',
  networkerror: '5.0.944',
  norelaying: '5.0.909',
  notaccept: '5.0.932',
  onhold: '5.0.901',
  policyviolation: '5.0.972',
  rejected: '5.0.918',
  securityerror: '5.0.970',
  spamdetected: '5.0.980',
  speeding: '5.0.946',
  suspend: '5.0.921',
  systemerror: '5.0.930',
  systemfull: '5.0.931',
  syntaxerror: '5.0.902',
  toomanyconn: '5.0.945',
  userunknown: '5.0.911',
  undefined: '5.0.900',
  virusdetected: '5.0.971',
};

/** Sisimai's made-up status for a reason when the message carries no enhanced code. */
export function pseudoStatus(reason: BounceReason, temporary: boolean): string | null {
  if (temporary) return PSEUDO_TEMPORARY[reason] ?? PSEUDO_PERMANENT[reason] ?? null;
  return PSEUDO_PERMANENT[reason] ?? null;
}
