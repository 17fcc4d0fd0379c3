// The `html` tagged template: every interpolated value is HTML-escaped unless it is already Html
// (built by `html` itself or by `raw`, for trusted constant markup). Arrays are joined, null/false/undefined render empty.
export class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value;
  }
}

const ESC: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};
export const escapeHtml = (s: string) => s.replace(/[&<>"'`]/g, (c) => ESC[c]);

export type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

/** Escapes every interpolated value by default. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Trusted markup that must not be escaped (constants only, never user data). */
export const raw = (s: string) => new Html(s);

/** A URL for an href: only relative paths or http(s); anything else (javascript:…) becomes '#'. */
export function safeUrl(u: string): string {
  return /^(\/(?!\/)|https?:\/\/)/i.test(u) ? u : '#';
}

/** A query string from defined, non-empty params. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
