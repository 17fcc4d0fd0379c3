// The delivery timeline of one email: email-level events, then each recipient's events (oldest first)
// with what was learned (SMTP reply, MX host, TLS, bounce reason, opens and clicks). Pure rendering.
import { STATUSES } from '../../../core/status.js';
import type { Email } from '../../../services/present.js';
import { html, safeUrl, type Html } from '../html.js';
import { badge, time } from '../layout.js';

export interface Ev {
  id: string;
  type: string;
  recipient: string | null;
  created_at: string;
  data: Record<string, unknown>;
}

const str = (v: unknown) => (v === undefined || v === null || v === '' ? null : String(v));

function details(d: Record<string, unknown>): Html {
  const items: [string, Html | string][] = [];
  const add = (label: string, v: Html | string | null) => {
    if (v !== null && v !== '') items.push([label, v]);
  };
  const text = str(d.smtp_response);
  const head = [str(d.smtp_code), str(d.enhanced_status)].filter(Boolean).join(' ');
  const reply = text && head && text.startsWith(head) ? text : [head, text].filter(Boolean).join(' ');
  add('SMTP reply', reply ? html`<code>${reply}</code>` : null);
  add(
    'MX host',
    str(d.mx_host) &&
      html`<code>${str(d.mx_host)}</code>${str(d.remote_ip) ? html` (<code>${str(d.remote_ip)}</code>)` : ''}`,
  );
  add('TLS', tlsOf(d));
  if (d.reason !== undefined)
    add(
      'Bounce reason',
      `${str(d.reason)}${d.hard === true ? ' (hard: address suppressed)' : d.hard === false ? ' (soft)' : ''}`,
    );
  if (d.async === true) add('Learned', 'from a bounce report after acceptance');
  add('Attempt', str(d.attempt));
  add('Duration', str(d.duration_ms) && `${str(d.duration_ms)} ms`);
  add('Source', str(d.source));
  if (typeof d.url === 'string') add('Link', html`<a href="${safeUrl(d.url)}" rel="noopener noreferrer">${d.url}</a>`);
  if (Array.isArray(d.suppressed) && d.suppressed.length)
    add('Dropped (suppressed)', d.suppressed.map(String).join(', '));
  for (const k of ['user_agent', 'ip', 'next_attempt_at', 'error', 'message_id']) add(k.replace(/_/g, ' '), str(d[k]));
  if (!items.length) return html``;
  return html`<dl class="facts event-data">
    ${items.map(
      ([k, v]) =>
        html`<dt>${k}</dt>
          <dd>${v}</dd>`,
    )}
  </dl>`;
}

/** An attempt's TLS outcome (event `details.tls`): version and cipher, verified or not, policy, failure. */
function tlsOf(d: Record<string, unknown>): string | null {
  const t = d.tls as
    | {
        version: string | null;
        cipher: string | null;
        verified: boolean;
        policy: string;
        failure?: string;
        result_type?: string;
      }
    | undefined;
  if (!t || typeof t !== 'object') return str(d.tls_version);
  const parts = [
    t.version ? `${t.version}${t.cipher ? ` ${t.cipher}` : ''}` : 'no TLS',
    t.version ? (t.verified ? 'certificate verified' : 'certificate not verified') : null,
    `policy ${t.policy}`,
    t.result_type || t.failure ? `failure: ${[t.result_type, t.failure].filter(Boolean).join(', ')}` : null,
  ];
  return parts.filter(Boolean).join('; ');
}

const eventItem = (ev: Ev) => html`<li>${badge(ev.type)} ${time(ev.created_at)}${details(ev.data)}</li>`;

function recipientsOf(e: Email): { address: string; kind: string }[] {
  const seen = new Set<string>();
  const out: { address: string; kind: string }[] = [];
  for (const [kind, xs] of [
    ['to', e.to],
    ['cc', e.cc],
    ['bcc', e.bcc],
  ] as const) {
    for (const a of xs ?? [])
      if (!seen.has(a.toLowerCase())) {
        seen.add(a.toLowerCase());
        out.push({ address: a, kind });
      }
  }
  return out;
}

const isStatus = (t: string) => (STATUSES as readonly string[]).includes(t);

export function timeline(e: Email, events: Ev[]): Html {
  const own = events.filter((ev) => ev.recipient === null);
  const suppressed = new Set(
    own.flatMap((ev) =>
      Array.isArray(ev.data.suppressed) ? ev.data.suppressed.map((x) => String(x).toLowerCase()) : [],
    ),
  );
  const sections = recipientsOf(e).map((r, i) => {
    const evs = events.filter((ev) => ev.recipient !== null && ev.recipient.toLowerCase() === r.address.toLowerCase());
    const last = [...evs].reverse().find((ev) => isStatus(ev.type));
    const state = suppressed.has(r.address.toLowerCase())
      ? html`<span class="badge">suppressed: not sent</span>`
      : badge(last?.type ?? (e.status === 'canceled' ? 'canceled' : 'queued'));
    return html`<section class="card" aria-labelledby="rcpt-${i}">
      <h3 id="rcpt-${i}">${r.address} <span class="muted">(${r.kind})</span> ${state}</h3>
      ${
        evs.length
          ? html`<ol class="timeline">
              ${evs.map(eventItem)}
            </ol>`
          : html`<p class="muted">No delivery events for this recipient yet.</p>`
      }
    </section>`;
  });
  return html`<section class="card" aria-labelledby="rcpt-email">
      <h3 id="rcpt-email">Email status changes</h3>
      ${
        own.length
          ? html`<ol class="timeline">
              ${own.map(eventItem)}
            </ol>`
          : html`<p class="muted">No events yet.</p>`
      }
    </section>
    ${sections}`;
}
