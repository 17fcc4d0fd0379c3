// Mail received at a team's domains (docs/receiving.md): which recipients are a team's, the message read in the
// parse pool (inbound/mail.ts) and authenticated (mailauth: SPF, DKIM, DMARC through MTA_DNS_SERVERS), stored once
// per team (migration 031) with `inbound.received` queued to the team's live endpoints in the same transaction.
import { authenticate } from 'mailauth';
import { newId } from '../core/ids.js';
import type { MailReading, MailUnread } from '../core/inbound-mail.js';
import { receivingDomain } from '../store/domains.js';
import { insertInboundEmail, liveEmailAmong } from '../store/inbound-emails.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { enabledEndpointsOfTeam, queueOutboxRow } from '../store/webhooks.js';
import { presentInbound, type InboundParsed } from './present-inbound.js';
import { createResolver } from './resolver.js';
import { nudged } from './nudges.js';
import { iso } from './present.js';
import type { Ctx } from './context.js';

export const INBOUND_EVENT = 'inbound.received';

/** The domain receiving mail at `domain` (a team's, `receiving` on), for the listener's RCPT decision. */
export const receivingDomainOf = (ctx: Pick<Ctx, 'db'>, domain: string) =>
  runPlan(ctx.db, receivingDomain(ctx.db, domain));

/** The plus-address part of a local part (`reply+ticket42` → `ticket42`), or null. */
export function plusPart(address: string): string | null {
  const local = address.slice(0, address.lastIndexOf('@'));
  const plus = local.indexOf('+');
  return plus < 0 || plus === local.length - 1 ? null : local.slice(plus + 1);
}

/** Our email ids (`<em_…@host>`) named by In-Reply-To, then References newest first. */
export function repliedIds(m: Pick<MailReading, 'in_reply_to' | 'references'>): string[] {
  const named = [m.in_reply_to ?? '', ...[...m.references].reverse()];
  const ids: string[] = [];
  for (const v of named) for (const x of v.matchAll(/<?(em_[0-9a-z]{10,40})@[^>\s]+>?/gi)) ids.push(x[1].toLowerCase());
  return [...new Set(ids)];
}

export interface Verdicts {
  spf: string;
  dkim: string;
  dmarc: string;
}

/** mailauth's checks of `raw` as received from `env` (DNS through MTA_DNS_SERVERS; ARC and BIMI off). Throws on trouble. */
export function checkMessage(
  ctx: Pick<Ctx, 'config'>,
  raw: Buffer,
  env: { mailFrom: string | null; remoteIp: string | null; helo?: string | null },
  opts: { disableDmarc?: boolean } = {},
) {
  const resolver = createResolver(ctx.config, {
    timeoutMs: Math.max(1, Math.round(ctx.config.dnsCheckTimeoutSeconds * 1000)),
  });
  return authenticate(raw, {
    ip: env.remoteIp ?? '127.0.0.1',
    helo: env.helo ?? undefined,
    sender: env.mailFrom ?? undefined,
    mta: ctx.config.hostname,
    resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<never>,
    disableArc: true,
    disableBimi: true,
    ...opts,
  } as Parameters<typeof authenticate>[1]);
}

/** SPF (of MAIL FROM, else HELO), DKIM (the best signature) and DMARC as mailauth reports them; `temperror` on trouble. */
export async function verdicts(
  ctx: Pick<Ctx, 'config' | 'now'>,
  raw: Buffer,
  env: { mailFrom: string | null; remoteIp: string | null; helo: string | null },
): Promise<Verdicts> {
  try {
    const res = await checkMessage(ctx, raw, env);
    const dkim = res.dkim?.results ?? [];
    const best = dkim.find((r) => r.status?.result === 'pass') ?? dkim[0];
    return {
      spf: res.spf ? (res.spf.status?.result ?? 'none') : 'none',
      dkim: best?.status?.result ?? 'none',
      dmarc: res.dmarc ? (res.dmarc.status?.result ?? 'none') : 'none',
    };
  } catch {
    return { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror' };
  }
}

export interface ReceivedEnvelope {
  mailFrom: string | null;
  rcptTo: string[];
  remoteIp: string | null;
  helo: string | null;
}

/**
 * Stores a received message for each team owning one of its recipients and queues `inbound.received`; answers the
 * ids (one per team). Null when the message could not be read within the budget (nothing stored).
 */
export async function recordReceived(
  ctx: Ctx,
  raw: Buffer,
  env: ReceivedEnvelope,
  read: { parseMail: (raw: Buffer) => Promise<MailReading | MailUnread> },
): Promise<string[] | null> {
  const [mail, auth] = await Promise.all([read.parseMail(raw), verdicts(ctx, raw, env)]);
  if ('error' in mail) {
    ctx.log.warn({ error: mail.error, rcpt: env.rcptTo, size: raw.length }, 'received message not read; refused');
    return null;
  }
  const byDomain = new Map<string, { domain: { id: string; team_id: string }; rcpts: string[] }>();
  for (const rcpt of env.rcptTo) {
    const d = await receivingDomainOf(ctx, rcpt.slice(rcpt.lastIndexOf('@') + 1).toLowerCase());
    if (!d) continue;
    const g = byDomain.get(d.team_id) ?? { domain: d, rcpts: [] };
    g.rcpts.push(rcpt);
    byDomain.set(d.team_id, g);
  }
  const ids: string[] = [];
  let posted = 0;
  for (const { domain, rcpts } of byDomain.values()) {
    const stored = await runPlan(
      ctx.db,
      transaction(ctx.db, () => storeOne(ctx, raw, env, mail, auth, domain, rcpts)),
    );
    ids.push(stored.id);
    posted += stored.endpoints;
  }
  if (posted > 0) nudged(ctx.db, 'webhooks'); // the dispatcher looks now
  ctx.log.info({ inbound: ids, rcpt: env.rcptTo, from: env.mailFrom, size: raw.length, auth }, 'mail received');
  return ids;
}

function* storeOne(
  ctx: Ctx,
  raw: Buffer,
  env: ReceivedEnvelope,
  mail: MailReading,
  auth: Verdicts,
  domain: { id: string; team_id: string },
  rcpts: string[],
): Gen<{ id: string; endpoints: number }> {
  const now = ctx.now();
  const id = newId('in', now);
  const parsed: InboundParsed = {
    from: mail.from,
    to: mail.to,
    cc: mail.cc,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    headers: mail.headers,
    message_id: mail.message_id,
    in_reply_to: mail.in_reply_to,
    references: mail.references,
    attachments: mail.attachments.map(({ content: _c, ...meta }) => meta),
    auth,
    envelope: { mail_from: env.mailFrom, rcpt_to: rcpts.map((address) => ({ address, plus: plusPart(address) })) },
  };
  const row = {
    id,
    team_id: domain.team_id,
    domain_id: domain.id,
    received_at: now,
    mail_from: env.mailFrom,
    rcpt_to: rcpts.join(','),
    remote_ip: env.remoteIp,
    size: raw.length,
    email_id: yield* liveEmailAmong(ctx.db, domain.team_id, repliedIds(mail)),
    parsed_json: JSON.stringify(parsed),
  };
  yield* insertInboundEmail(
    ctx.db,
    { ...row, raw },
    mail.attachments.map((a) => a.content),
  );
  const endpoints = (yield* enabledEndpointsOfTeam(ctx.db, domain.team_id)).filter(
    (e) => e.mode === 'live' && e.events.split(' ').includes(INBOUND_EVENT),
  );
  if (endpoints.length === 0) return { id, endpoints: 0 };
  const eventId = newId('evt', now);
  const payload = JSON.stringify({
    id: eventId,
    object: 'event',
    type: INBOUND_EVENT,
    created_at: iso(now),
    data: { inbound: presentInbound({ ...row, content_expired_at: null }) },
  });
  for (const e of endpoints)
    yield* queueOutboxRow(ctx.db, {
      id: newId('whd', now),
      endpoint_seq: e.seq,
      event_id: eventId,
      event_type: INBOUND_EVENT,
      payload,
      next_attempt_at: now,
      created_at: now,
    });
  return { id, endpoints: endpoints.length };
}
