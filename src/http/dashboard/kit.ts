// Request helpers for dashboard handlers: the session in state, form fields as strings, rendering an
// Html page and Post/Redirect/Get redirects (303). Scope checks: services/keys requireScope(sess(k).principal, …).
import type Router from '@koa/router';
import type { RouterContext } from '@koa/router';
import type { Ctx } from '../../services/context.js';
import type { State } from '../middleware.js';
import type { Html } from './html.js';
import { layout, noticeText, type PageOpts } from './layout.js';
import type { Session } from './session.js';

export interface DashState extends State {
  session?: Session;
}
export type DCtx = RouterContext<DashState>;
export type DRouter = Router<DashState>;

export const sess = (k: DCtx): Session => k.state.session!;

/** A form field as a trimmed string ('' when absent or not a string). */
export function field(k: DCtx, name: string): string {
  const b = (k.request as { body?: Record<string, unknown> }).body;
  const v = b && typeof b === 'object' ? b[name] : undefined;
  return typeof v === 'string' ? v.trim() : '';
}
/** All values of a repeated form field (checkboxes). */
export function fields(k: DCtx, name: string): string[] {
  const b = (k.request as { body?: Record<string, unknown> }).body;
  const v = b && typeof b === 'object' ? b[name] : undefined;
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === 'string');
}
export const qs = (k: DCtx, name: string): string | undefined => {
  const v = k.query[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
};

export function render(k: DCtx, body: Html, status = 200) {
  k.status = status;
  k.type = 'text/html; charset=utf-8';
  k.body = body.value;
}

/** Renders a signed-in page with the team's name and a notice named by `?notice=`. */
export function page(_app: Ctx, k: DCtx, o: Omit<PageOpts, 'session' | 'teamName'>, status = 200) {
  const s = sess(k);
  render(
    k,
    layout({ ...o, session: s, teamName: teamNameOf(s), notice: o.notice ?? noticeText(k.query.notice) }),
    status,
  );
}

/** The name of the session's team for the page header (read with the session; undefined once the team is gone). */
export function teamNameOf(s: Session | null | undefined): string | undefined {
  return s?.teamName;
}

export function seeOther(k: DCtx, url: string) {
  k.status = 303;
  k.redirect(url);
}
