// The provider registry: what the inbound reader knows about each provider's or MTA family's bounces, as data,
// and the order in which that knowledge decides a recipient's reason (PRECEDENCE and the *_ORDER lists). Pure.
//
// Where to add a rule
// - A code or phrase one provider writes in its replies goes in that provider's file (google.ts, microsoft.ts,
//   isp.ts, japan.ts, gateways.ts, mta.ts): in its `codeRules` when it may appear in any notice (the provider's own
//   code, or phrases gated on its host name), in its `byHost` table when it holds only for replies from its `hosts`
//   (the Remote-MTA, the "host X said" name, or the recipient's domain).
// - A new notice format (how an MTA's own bounce looks and reads): a NoticeFormat in its provider's `notices`, and its
//   family in NOTICE_ORDER below, before any looser format that would also match its notices.
// - A new provider: an entry in its file's list (or a new file added to PROVIDERS), and its names in HOST_ORDER /
//   CODE_RULE_ORDER / NOTICE_ORDER; loading this module throws until every host table, code rule and notice is placed.
// - A phrase that means the same whoever writes it is not provider knowledge: src/core/reply-rules.ts.
// scripts/check-regex.ts checks every regex of this folder for ReDoS (`npx tsx scripts/check-regex.ts`).
import { type BounceReason, RETRY_REASONS } from '../bounce-reasons.js';
import { GATEWAY_PROVIDERS } from './gateways.js';
import { GOOGLE_PROVIDER } from './google.js';
import { ISP_PROVIDERS } from './isp.js';
import { JAPAN_PROVIDERS } from './japan.js';
import { MICROSOFT_PROVIDERS } from './microsoft.js';
import { localAgentReason } from './local-agents.js';
import { MTA_PROVIDERS } from './mta.js';
import { MORE_MTA_PROVIDERS } from './mta-more.js';
import { MAILBOX_PROVIDERS } from './brands.js';
import { type CodeRule, type NoticeFormat, type Provider, type ProviderInput, type VendorPhrases } from './types.js';

export type { CodeRule, NoticeFormat, Provider, ProviderInput } from './types.js';
export { DSN_FIELD_REASONS, GENERIC_LHOST_SIGNS, QUOTED_REPLY_DECODER } from './mta.js';
export { UNFORMATTED_DECODER_SIGNS } from './decoder-signs.js';

export const PROVIDERS: readonly Provider[] = [
  ...MICROSOFT_PROVIDERS,
  GOOGLE_PROVIDER,
  ...ISP_PROVIDERS,
  ...JAPAN_PROVIDERS,
  ...GATEWAY_PROVIDERS,
  ...MTA_PROVIDERS,
  ...MORE_MTA_PROVIDERS,
];

/** Sources of a recipient's reason, strongest first (see PRECEDENCE). */
export type Source = 'notice-definite' | 'local-agent' | 'remote-host' | 'notice' | 'code-rules' | 'vendor-phrases';

/**
 * Who decides a recipient's reason: the first source that answers wins; classify.ts then keeps that answer unless it
 * is one of RETRY_REASONS, which it re-reads against the status and text (Sisimai's order):
 * 1. notice-definite: the notice's own reader (its format's tables, Gmail's "(state N)") gave a definite reason —
 *    the MTA that wrote the notice knows what it meant;
 * 1b. local-agent: a local delivery agent's error text (dovecot, procmail, ...; local-agents.ts), also in the notice's
 *    own words ahead of the delivery-status part when it names one recipient (go-sisimai lda.Find, before Rhost);
 * 2. remote-host: the table of the provider whose host returned the reply — it knows its replies better than a
 *    relaying MTA's retry-class reading of them (Sisimai Rhost);
 * 3. notice: the notice reader's retry-class reason (userunknown, expired, ...) when no host table answered;
 * 4. code-rules: a provider's own code or host-gated phrase anywhere in the reply, in CODE_RULE_ORDER;
 * 5. vendor-phrases: MTA phrases with one meaning (Exchange, Domino, qmail, Google Groups).
 */
export const PRECEDENCE: readonly Source[] = [
  'notice-definite',
  'local-agent',
  'remote-host',
  'notice',
  'code-rules',
  'vendor-phrases',
];

/** Order in which the providers' hosts are tried (a host or domain belongs to at most one of them; kept stable). */
export const HOST_ORDER: readonly string[] = [
  'Aol',
  'Apple',
  'Facebook',
  'Google',
  'KDDI',
  'MessageLabs',
  'Microsoft',
  'Mimecast',
  'NTTDOCOMO',
  'Outlook',
];

/**
 * Order in which the code rules are tried, first answer wins: an Exchange NDR code names its meaning exactly, so it
 * comes first; the ISPs' own codes and host-gated phrases next; Orange's "OFR_506" codes last, as they were.
 */
export const CODE_RULE_ORDER: readonly string[] = [
  'ExchangeNDR',
  'Cox',
  'Spectrum',
  'GoDaddy',
  'Tencent',
  'IUA',
  'YahooInc',
  'Microsoft',
  'FrancePTT',
];

/**
 * Order in which notice formats are detected, first match wins. A provider header (Yahoo, Aol, MXLogic) is certain;
 * Office365 (two Microsoft signs) before Exchange2007 (both "Undeliverable:"); MailRu (an Exim) before Exim; Exim
 * before X3 (both "Mail Delivery System"); EZweb before KDDI (an EZweb notice also passes KDDI's loose Received
 * test); Biglobe before V5sendmail (both "Returned mail:"); the loose subject-only formats (X1–X6) late.
 */
export const NOTICE_ORDER: readonly string[] = [
  'Office365',
  'FML',
  'InterScanMSS',
  'IMailServer',
  'Yahoo',
  'Aol',
  'MailRu',
  'MXLogic',
  'GMX',
  'DragonFly',
  'Exim',
  'Gmail',
  'Outlook',
  'Courier',
  'Exchange2007',
  'EZweb',
  'KDDI',
  'Biglobe',
  'mFILTER',
  'MailMarshalSMTP',
  'MailFoundry',
  'Domino',
  'Notes',
  'Verizon',
  'CommuniGate',
  'X1',
  'X2',
  'X3',
  'X4',
  'X6',
  'OpenSMTPD',
  'Zoho',
  'MessagingServer',
  'V5sendmail',
];

/** `items` in the order `order` names them; throws when one is missing from the order or the order names an unknown. */
function inOrder<T>(what: string, order: readonly string[], items: readonly T[], name: (t: T) => string): readonly T[] {
  const byName = new Map(items.map((t) => [name(t), t]));
  const unplaced = [...byName.keys()].filter((n) => !order.includes(n));
  if (byName.size !== items.length || unplaced.length)
    throw new Error(`provider registry: place ${what} ${unplaced.join(', ')} (or rename a duplicate)`);
  return order.map((n) => {
    const t = byName.get(n);
    if (t === undefined) throw new Error(`provider registry: ${what} order names unknown ${n}`);
    return t;
  });
}

/** Notice formats in detection order. */
export const NOTICE_FORMATS: readonly NoticeFormat[] = inOrder(
  'notice',
  NOTICE_ORDER,
  PROVIDERS.flatMap((p) => p.notices ?? []),
  (f) => f.family,
);
/** Code rules in the order they are tried. */
export const CODE_RULES: readonly CodeRule[] = inOrder(
  'code rule',
  CODE_RULE_ORDER,
  PROVIDERS.flatMap((p) => p.codeRules ?? []),
  (r) => r.name,
);
const HOST_PROVIDERS = inOrder(
  'host table',
  HOST_ORDER,
  PROVIDERS.filter((p) => p.hosts),
  (p) => p.name,
);
const VENDOR_PHRASES: VendorPhrases = PROVIDERS.flatMap((p) => p.vendorPhrases ?? []);

const byHostName = (host: string) =>
  host
    ? HOST_PROVIDERS.find((p) => p.hosts?.some((h) => host.endsWith(h) || host === h.replace(/^\./, '')))
    : undefined;

/**
 * The provider whose hosts the remote host names, else whose hosts end with the recipient's domain, else whose hosts
 * name the host that wrote the report (a gateway's own notice about a reply from behind it).
 */
export function providerOf(
  rhost: string | null | undefined,
  destination: string | null | undefined,
  lhost?: string | null,
): string | null {
  const dest = (destination ?? '').toLowerCase();
  const hit =
    byHostName((rhost ?? '').toLowerCase()) ||
    (dest && HOST_PROVIDERS.find((p) => p.hosts?.some((h) => h.endsWith(`.${dest}`) || h === dest))) ||
    byHostName((lhost ?? '').toLowerCase());
  return hit ? hit.name : null;
}

/** The reason the table of the provider that returned this reply gives, if any (Sisimai Rhost). */
export function providerReason(i: ProviderInput): BounceReason | null {
  if (!i.text) return null;
  const name = providerOf(i.rhost, i.destination, i.lhost);
  return HOST_PROVIDERS.find((p) => p.name === name)?.byHost?.(i) ?? null;
}

/**
 * The reason a provider's own code or (host-gated) phrase table gives for this reply text, if any. The gate
 * is tried on the text and on the remote host, as Sisimai picks its Rhost table by that host.
 */
export function codeRuleReason(text: string, host?: string | null): BounceReason | null {
  const lower = text.toLowerCase();
  for (const r of CODE_RULES) {
    const code = r.code?.exec(text)?.[1];
    if (code) {
      const byCode = r.codes?.[code];
      if (byCode) return byCode;
      const n = Number(code);
      const range = r.ranges?.find(([lo, hi]) => n >= lo && n <= hi);
      if (range) return range[2];
    }
    if (r.gate?.test(text) || (host && r.gate?.test(host))) {
      const hit = r.phrases?.find((p) => p.includes.some((s) => lower.includes(s)));
      if (hit) return hit.reason;
    }
  }
  return null;
}

/** What the registry is asked about one recipient: its reply facts and the notice reader's reason, if any. */
export interface RecipientFacts extends ProviderInput {
  /** the reason the notice's own reader gave (format tables, Gmail state), if any */
  notice?: BounceReason | null;
  /** the notice's own words about this (single) recipient, ahead of its delivery-status part, if any */
  lead?: string | null;
}

const SOURCES: Readonly<Record<Source, (f: RecipientFacts) => BounceReason | null>> = {
  'notice-definite': (f) => (f.notice && !RETRY_REASONS.has(f.notice) ? f.notice : null),
  'local-agent': (f) => localAgentReason(`${f.lead ?? ''} ${f.text}`, f.command),
  'remote-host': providerReason,
  notice: (f) => f.notice ?? null,
  'code-rules': (f) => codeRuleReason(f.text, f.rhost),
  'vendor-phrases': (f) => vendorPhraseReason(f),
};

/** The first vendor phrase in the text that the notice's decoder reads (every one in a live reply). */
function vendorPhraseReason(f: RecipientFacts): BounceReason | null {
  const lower = f.text.toLowerCase();
  const hit = VENDOR_PHRASES.find(
    ([, ps, decoders]) => (!f.decoder || decoders.includes(f.decoder)) && ps.some((p) => lower.includes(p)),
  );
  return hit?.[0] ?? null;
}

/** The reason the registry's knowledge gives this recipient, asked in PRECEDENCE order; null: the generic reading decides. */
export function registryReason(f: RecipientFacts): BounceReason | null {
  return registryAnswer(f)?.reason ?? null;
}

/** registryReason and the source that gave it. */
export function registryAnswer(f: RecipientFacts): { reason: BounceReason; source: Source } | null {
  for (const source of PRECEDENCE) {
    const reason = SOURCES[source](f);
    if (reason) return { reason, source };
  }
  return null;
}

/** Where a recipient's bounce came from: the hosts and the reply text that name the provider that answered. */
export interface AnswerFacts {
  rhost?: string | null;
  lhost?: string | null;
  destination?: string | null;
  text?: string | null;
}

for (const name of MAILBOX_PROVIDERS.flatMap((b) => b.registry ?? []))
  if (!PROVIDERS.some((p) => p.name === name))
    throw new Error(`provider registry: mailbox provider names unknown ${name}`);
const BRAND_HOSTS = MAILBOX_PROVIDERS.map((b) => ({
  provider: b.provider,
  hosts: [...(b.hosts ?? []), ...PROVIDERS.filter((p) => b.registry?.includes(p.name)).flatMap((p) => p.hosts ?? [])],
}));
const brandOfHost = (host: string | null | undefined): string | null => {
  const h = (host ?? '').toLowerCase().replace(/\.$/, '');
  if (!h) return null;
  const hit = BRAND_HOSTS.find((b) => b.hosts.some((s) => h.endsWith(s) || h === s.replace(/^\./, '')));
  return hit?.provider ?? null;
};

/**
 * The mailbox provider that answered (MAILBOX_PROVIDERS' name: google, microsoft, yahoo, ...), or null: by the
 * remote host, else a sign in the reply text, else the host that wrote the report, else the recipient's domain.
 */
export function mailboxProvider(f: AnswerFacts): string | null {
  const dest = (f.destination ?? '').toLowerCase();
  return (
    brandOfHost(f.rhost) ??
    (f.text ? (MAILBOX_PROVIDERS.find((b) => b.signs?.test(f.text as string))?.provider ?? null) : null) ??
    brandOfHost(f.lhost) ??
    (dest ? (MAILBOX_PROVIDERS.find((b) => b.domains?.includes(dest))?.provider ?? null) : null)
  );
}
