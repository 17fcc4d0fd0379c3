// /v1/domains: add (201 with the DNS records to publish), list, fetch, verify now, rotate DKIM, delete; the DMARC
// summary and reports of a domain (decisions.md "DMARC summary").
// PATCH /domains/{id} {receiving} turns receiving on or off (docs/receiving.md).
// Scopes: domains:read to read, domains:write for everything that changes or re-checks; a test key
// reads but never changes domains (403 test_key_not_allowed).
import type Router from '@koa/router';
import { addDomain, getDomain, listDomains, deleteDomain, rotateDkim, updateDomain } from '../../services/domains.js';
import { verifyDomain } from '../../services/domain-checks.js';
import { getDmarcSummary, listDmarcReports } from '../../services/dmarc-summary.js';
import { requireLive } from '../../services/keys.js';
import { CreateDomain, DmarcQuery, ListQuery, UpdateDomain } from '../schemas.js';
import { validator } from '../validate.js';
import { limitOf, principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkCreate = validator(CreateDomain);
const checkUpdate = validator(UpdateDomain);
const checkPage = validator(ListQuery);
const checkWindow = validator(DmarcQuery);

export function domainRoutes(r: Router, { app, auth }: Deps) {
  r.post('/domains', auth('domains:write'), async (ctx: KoaCtx) => {
    requireLive(principal(ctx), 'add domains');
    const b = checkCreate(ctx.request.body);
    ctx.body = await addDomain(app, principal(ctx).teamId, b.name, { ed25519: b.dkim?.ed25519 === true });
    ctx.status = 201;
  });
  r.get('/domains', auth('domains:read'), async (ctx: KoaCtx) => {
    const q = checkPage(ctx.query);
    ctx.body = await listDomains(app, principal(ctx).teamId, limitOf(q.limit), q.cursor);
  });
  r.get('/domains/:id', auth('domains:read'), async (ctx: KoaCtx) => {
    ctx.body = await getDomain(app, principal(ctx).teamId, ctx.params.id);
  });
  r.patch('/domains/:id', auth('domains:write'), async (ctx: KoaCtx) => {
    requireLive(principal(ctx), 'change domains');
    ctx.body = await updateDomain(app, principal(ctx).teamId, ctx.params.id, checkUpdate(ctx.request.body));
  });
  r.get('/domains/:id/dmarc', auth('domains:read'), async (ctx: KoaCtx) => {
    ctx.body = await getDmarcSummary(app, principal(ctx).teamId, ctx.params.id, checkWindow(ctx.query));
  });
  r.get('/domains/:id/dmarc/reports', auth('domains:read'), async (ctx: KoaCtx) => {
    const q = checkPage(ctx.query);
    ctx.body = await listDmarcReports(app, principal(ctx).teamId, ctx.params.id, limitOf(q.limit), q.cursor);
  });
  r.post('/domains/:id/verify', auth('domains:write'), async (ctx: KoaCtx) => {
    requireLive(principal(ctx), 're-check domains');
    ctx.body = await verifyDomain(app, principal(ctx).teamId, ctx.params.id);
  });
  r.post('/domains/:id/rotate-dkim', auth('domains:write'), async (ctx: KoaCtx) => {
    requireLive(principal(ctx), 'rotate DKIM keys');
    ctx.body = await rotateDkim(app, principal(ctx).teamId, ctx.params.id);
  });
  r.delete('/domains/:id', auth('domains:write'), async (ctx: KoaCtx) => {
    requireLive(principal(ctx), 'delete domains');
    ctx.body = await deleteDomain(app, principal(ctx).teamId, ctx.params.id);
  });
}
