// Engagement tracking: rewrites an email's html (1×1 open pixel, click redirects) with HMAC-signed
// tokens naming the email (and the link's URL), and turns hits on them into opened/clicked events.
import { Parser } from 'htmlparser2';
import { TokenSigner } from '../core/signed-token.js';
import { clickedSince, hasEventOfType } from '../store/events.js';
import { emailByPublicId, deliveriesOf, type EmailRow } from '../store/emails.js';
import { secret } from '../store/settings.js';
import { appendStatusEventPlan } from './transition.js';
import type { Ctx } from './context.js';
import { runPlan, runSync, transaction, type Gen } from '../store/op.js';
import { runPooled } from '../store/pg/plan-driver.js';

type Kind = 'o' | 'c';

const signers = new WeakMap<Ctx['db'], TokenSigner>();
const loading = new WeakMap<Ctx['db'], Promise<void>>();
/**
 * The token signer's secret, read once per process and awaited before it is needed: by the delivery loop before it
 * builds a tracked message (outbound/compose.ts, whose applyTracking is synchronous) and by the tracking hits. On
 * PostgreSQL with a pool the read goes there (the event loop goes on); elsewhere at once underneath.
 */
export function trackingReady(ctx: Pick<Ctx, 'db'>): Promise<void> {
  if (signers.has(ctx.db)) return Promise.resolve();
  let p = loading.get(ctx.db);
  if (!p) {
    p = runPooled(ctx.db, secret(ctx.db, 'tracking'), 'other').then(
      (key) => {
        if (!signers.has(ctx.db)) signers.set(ctx.db, new TokenSigner('tracking', key));
      },
      (err: unknown) => {
        loading.delete(ctx.db);
        throw err;
      },
    );
    loading.set(ctx.db, p);
  }
  return p;
}
// Once trackingReady answered, remembered; before it (a caller that did not await it), read on the spot.
const signerOf = (ctx: Ctx) =>
  signers.get(ctx.db) ??
  signers.set(ctx.db, new TokenSigner('tracking', runSync(secret(ctx.db, 'tracking')))).get(ctx.db)!;
/** The MAC input names the kind, so an open token never passes as a click token (or the reverse). */
const macInput = (kind: Kind, emailId: string, url: string) => `${kind}\n${emailId}\n${url}`;

export function makeToken(ctx: Ctx, kind: Kind, emailId: string, url = ''): string {
  const body = Buffer.from(kind === 'o' ? emailId : `${emailId}\n${url}`).toString('base64url');
  return `${body}.${signerOf(ctx).mac(macInput(kind, emailId, url))}`;
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
  return signerOf(ctx).verify(macInput(kind, emailId, url), m[2]) ? { emailId, url } : null;
}

const isWebUrl = (u: string) => /^https?:\/\/[^\s]+$/i.test(u);
/** Longer links are left untracked: their token would not be readable (nor fit a request line). */
const MAX_TRACKED_URL_BYTES = 5900;
const base = (ctx: Ctx) => ctx.config.publicUrl.replace(/\/+$/, '');
export const openUrl = (ctx: Ctx, emailId: string) => `${base(ctx)}/t/o/${makeToken(ctx, 'o', emailId)}.gif`;
export const clickUrl = (ctx: Ctx, emailId: string, url: string) =>
  `${base(ctx)}/t/c/${makeToken(ctx, 'c', emailId, url)}`;

/** `"` and `&` escaped for a double-quoted attribute value. */
const attr = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/**
 * The first `href` of each `<a>`/`<area>` found by htmlparser2 (one linear pass; entities decoded by the
 * parser), with the [start, end) offsets of its value in `html` (quotes included).
 */
function hrefSpans(html: string): { url: string; start: number; end: number }[] {
  const spans: { url: string; start: number; end: number }[] = [];
  let inLink = false;
  let seen = false;
  const p: Parser = new Parser(
    {
      onopentagname(name) {
        inLink = name === 'a' || name === 'area';
        seen = false;
      },
      onattribute(name, value, quote) {
        if (!inLink || seen || name !== 'href') return;
        seen = true;
        if (quote === undefined) return; // `href` without a value
        // The attribute spans [startIndex, endIndex): its name, optional spaces, '=', spaces, the value.
        const eq = html.indexOf('=', p.startIndex);
        let start = eq + 1;
        while (/\s/.test(html[start])) start++;
        spans.push({ url: value.trim(), start, end: p.endIndex });
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  p.end(html);
  return spans;
}

/** Rewrites the values of tracked links only; every other byte of the html is kept as it was. */
function rewriteLinks(ctx: Ctx, emailId: string, html: string): string {
  const parts: string[] = [];
  let at = 0;
  for (const { url, start, end } of hrefSpans(html)) {
    if (!isWebUrl(url) || Buffer.byteLength(url) > MAX_TRACKED_URL_BYTES) continue;
    parts.push(html.slice(at, start), `"${attr(clickUrl(ctx, emailId, url))}"`);
    at = end;
  }
  parts.push(html.slice(at));
  return parts.join('');
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
function* recipientOf(ctx: Ctx, email: EmailRow): Gen<string | null> {
  const ds = yield* deliveriesOf(ctx.db, email.seq);
  return ds.length === 1 ? ds[0].recipient : null;
}

/** Hits on an email's tracking links count for this long after it was created; later ones still work but emit nothing. */
export const TRACKING_TTL_MS = 90 * 24 * 3600 * 1000;
/** Repeated clicks on one link by one recipient within this window make a single `clicked` event. */
export const CLICK_DEDUP_MS = 10 * 60 * 1000;

const expired = (ctx: Ctx, email: EmailRow) => ctx.now() - email.created_at > TRACKING_TTL_MS;

/** An open-pixel hit: the first one per email becomes an `opened` event. False when the token is bad. */
export async function recordOpen(ctx: Ctx, token: string): Promise<boolean> {
  await trackingReady(ctx);
  const t = readToken(ctx, 'o', token);
  if (!t) return false;
  return runPlan(
    ctx.db,
    transaction(ctx.db, () => openPlan(ctx, t.emailId)),
  );
}

function* openPlan(ctx: Ctx, emailId: string): Gen<boolean> {
  const email = yield* emailByPublicId(ctx.db, emailId);
  if (!email) return false;
  if (expired(ctx, email)) return true;
  if (!(yield* hasEventOfType(ctx.db, email.seq, 'opened')))
    yield* appendStatusEventPlan(ctx, email, 'opened', yield* recipientOf(ctx, email), { source: 'tracking' });
  return true;
}

/**
 * A click: the first per (email, recipient, link) within CLICK_DEDUP_MS becomes a `clicked` event, none after
 * TRACKING_TTL_MS. Returns the URL to redirect to (the signed token holds it, so it redirects even when the
 * email is gone), or null for a bad token.
 */
export async function recordClick(ctx: Ctx, token: string, record = true): Promise<string | null> {
  await trackingReady(ctx);
  const t = readToken(ctx, 'c', token);
  if (!t) return null;
  if (record)
    await runPlan(
      ctx.db,
      transaction(ctx.db, () => clickPlan(ctx, t.emailId, t.url)),
    );
  return t.url;
}

function* clickPlan(ctx: Ctx, emailId: string, url: string): Gen<void> {
  const email = yield* emailByPublicId(ctx.db, emailId);
  if (!email || expired(ctx, email)) return;
  const recipient = yield* recipientOf(ctx, email);
  if (!(yield* clickedSince(ctx.db, email.seq, recipient, url, ctx.now() - CLICK_DEDUP_MS)))
    yield* appendStatusEventPlan(ctx, email, 'clicked', recipient, { url, source: 'tracking' });
}
