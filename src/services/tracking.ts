// Engagement tracking: rewrites an email's html (1×1 open pixel, click redirects) with HMAC-signed
// tokens naming the email (and the link's URL), and turns hits on them into opened/clicked events.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { sql, tx } from '../store/db.js';
import { emailByPublicId, deliveriesOf, type EmailRow } from '../store/emails.js';
import { secret } from '../store/settings.js';
import { appendStatusEvent } from './transition.js';
import type { Ctx } from './context.js';

type Kind = 'o' | 'c';

const keys = new WeakMap<Ctx['db'], Buffer>();
const keyOf = (ctx: Ctx) => keys.get(ctx.db) ?? keys.set(ctx.db, secret(ctx.db, 'tracking')).get(ctx.db)!;

function mac(ctx: Ctx, kind: Kind, emailId: string, url: string): string {
  return createHmac('sha256', keyOf(ctx)).update(`${kind}\n${emailId}\n${url}`).digest().subarray(0, 16).toString('base64url');
}

export function makeToken(ctx: Ctx, kind: Kind, emailId: string, url = ''): string {
  const body = Buffer.from(kind === 'o' ? emailId : `${emailId}\n${url}`).toString('base64url');
  return `${body}.${mac(ctx, kind, emailId, url)}`;
}

/** The email id (and URL, for clicks) a token names, or null when it is malformed or tampered with. */
export function readToken(ctx: Ctx, kind: Kind, token: string): { emailId: string; url: string } | null {
  const m = /^([A-Za-z0-9_-]{1,8000})\.([A-Za-z0-9_-]{22})$/.exec(token); // 8000 > base64 of id + MAX_TRACKED_URL_BYTES
  if (!m) return null;
  const text = Buffer.from(m[1], 'base64url').toString('utf8');
  const nl = text.indexOf('\n');
  const emailId = kind === 'o' ? text : nl < 0 ? '' : text.slice(0, nl);
  const url = kind === 'o' ? '' : text.slice(nl + 1);
  if (!/^em_[0-9a-z]{26}$/.test(emailId) || (kind === 'c' && !isWebUrl(url))) return null;
  const want = Buffer.from(mac(ctx, kind, emailId, url));
  const got = Buffer.from(m[2]);
  return got.length === want.length && timingSafeEqual(got, want) ? { emailId, url } : null;
}

const isWebUrl = (u: string) => /^https?:\/\/[^\s]+$/i.test(u);
/** Longer links are left untracked: their token would not be readable (nor fit a request line). */
const MAX_TRACKED_URL_BYTES = 5900;
const base = (ctx: Ctx) => ctx.config.publicUrl.replace(/\/+$/, '');
export const openUrl = (ctx: Ctx, emailId: string) => `${base(ctx)}/t/o/${makeToken(ctx, 'o', emailId)}.gif`;
export const clickUrl = (ctx: Ctx, emailId: string, url: string) => `${base(ctx)}/t/c/${makeToken(ctx, 'c', emailId, url)}`;

const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };
function decodeAttr(v: string): string {
  return v.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (all, e: string) => {
    if (e[0] === '#') {
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : all;
    }
    return ENTITIES[e.toLowerCase()] ?? all;
  });
}

const HREF = /(<(?:a|area)\b[^>]*?\shref\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi;

function rewriteLinks(ctx: Ctx, emailId: string, html: string): string {
  return html.replace(HREF, (all, head: string, dq?: string, sq?: string, bare?: string) => {
    const url = decodeAttr((dq ?? sq ?? bare ?? '').trim());
    if (!isWebUrl(url) || Buffer.byteLength(url) > MAX_TRACKED_URL_BYTES) return all;
    return `${head}"${clickUrl(ctx, emailId, url)}"`;
  });
}

function addPixel(ctx: Ctx, emailId: string, html: string): string {
  const img = `<img src="${openUrl(ctx, emailId)}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px;" />`;
  const at = html.search(/<\/body\s*>/i);
  return at < 0 ? html + img : html.slice(0, at) + img + html.slice(at);
}

/** The html to send: links rewritten when click tracking is on, a pixel added when open tracking is on. */
export function applyTracking(ctx: Ctx, email: EmailRow, html: string): string {
  let out = html;
  if (email.tracking_clicks === 1) out = rewriteLinks(ctx, email.id, out);
  if (email.tracking_opens === 1) out = addPixel(ctx, email.id, out);
  return out;
}

/** One tracked recipient when the email has a single one; a shared message cannot tell recipients apart. */
function recipientOf(ctx: Ctx, email: EmailRow): string | null {
  const ds = deliveriesOf(ctx.db, email.seq);
  return ds.length === 1 ? ds[0].recipient : null;
}

/** An open-pixel hit: the first one per email becomes an `opened` event. False when the token is bad. */
export function recordOpen(ctx: Ctx, token: string): boolean {
  const t = readToken(ctx, 'o', token);
  if (!t) return false;
  return tx(ctx.db, () => {
    const email = emailByPublicId(ctx.db, t.emailId);
    if (!email) return false;
    const seen = sql(ctx.db, "SELECT 1 FROM events WHERE email_seq = ? AND type = 'opened' LIMIT 1").get(email.seq);
    if (!seen) appendStatusEvent(ctx, email, 'opened', recipientOf(ctx, email), { source: 'tracking' });
    return true;
  });
}

/** A click: every one becomes a `clicked` event. Returns the URL to redirect to, or null for a bad token. */
export function recordClick(ctx: Ctx, token: string, record = true): string | null {
  const t = readToken(ctx, 'c', token);
  if (!t) return null;
  return tx(ctx.db, () => {
    const email = emailByPublicId(ctx.db, t.emailId);
    if (!email) return null;
    if (record) appendStatusEvent(ctx, email, 'clicked', recipientOf(ctx, email), { url: t.url, source: 'tracking' });
    return t.url;
  });
}
