// GET /v1/inbound…: a team's received mail (docs/receiving.md). Received mail is live data: a test key sees an empty
// list and 404s (the Stripe model, decisions.md "Test keys"). The raw copy and attachment bytes answer 410
// content_expired after MTA_INBOUND_RETENTION_HOURS.
import { ApiError } from '../core/errors.js';
import * as store from '../store/inbound-emails.js';
import { runPlan, type Gen } from '../store/op.js';
import { decodeCursor, page } from './emails.js';
import { presentInbound, type InboundParsed } from './present-inbound.js';
import type { Owner } from './keys.js';
import type { Ctx } from './context.js';

const missing = () => new ApiError('not_found', 'inbound_email_not_found', 'No such received message.');
const expired = () =>
  new ApiError('not_found', 'content_expired', 'The raw copy and attachments of this message are no longer kept.');

function* rowOf(ctx: Ctx, owner: Owner, id: string): Gen<store.InboundEmailRow> {
  const row = owner.mode === 'live' ? yield* store.inboundEmailById(ctx.db, owner.teamId, id) : undefined;
  if (!row) throw missing();
  return row;
}

export const listInbound = (ctx: Ctx, owner: Owner, limit: number, cursor?: string) =>
  runPlan(
    ctx.db,
    (function* () {
      const before = yield* decodeCursor(ctx.db, 'in', cursor);
      const rows = owner.mode === 'live' ? yield* store.inboundEmailsOfTeam(ctx.db, owner.teamId, before, limit) : [];
      return yield* page(ctx.db, 'in', rows, limit, presentInbound);
    })(),
  );

export const getInbound = (ctx: Ctx, owner: Owner, id: string) =>
  runPlan(
    ctx.db,
    (function* () {
      return presentInbound(yield* rowOf(ctx, owner, id));
    })(),
  );

export const inboundRaw = (ctx: Ctx, owner: Owner, id: string): Promise<Buffer> =>
  runPlan(
    ctx.db,
    (function* () {
      const row = yield* rowOf(ctx, owner, id);
      const raw = row.content_expired_at === null ? yield* store.inboundRaw(ctx.db, row.seq) : null;
      if (!raw) throw expired();
      return raw;
    })(),
  );

/** The n-th attachment (from 0): its bytes, content type and file name. */
export const inboundAttachment = (ctx: Ctx, owner: Owner, id: string, nRaw: string) =>
  runPlan(
    ctx.db,
    (function* () {
      const row = yield* rowOf(ctx, owner, id);
      const meta = (JSON.parse(row.parsed_json) as InboundParsed).attachments;
      const n = /^\d{1,4}$/.test(nRaw) ? Number(nRaw) : -1;
      if (n < 0 || n >= meta.length)
        throw new ApiError('not_found', 'inbound_attachment_not_found', 'No attachment at this position.');
      const content = row.content_expired_at === null ? yield* store.inboundAttachment(ctx.db, row.seq, n) : null;
      if (!content) throw expired();
      return { content, content_type: meta[n].content_type, filename: meta[n].filename };
    })(),
  );
