// /docs/api: the API reference rendered on the server from the OpenAPI document (GET /v1/openapi.json), one
// static page without scripts or outside assets: operations by tag, the webhooks, then every named schema.
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const esc = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const code = (s: unknown) => `<code>${esc(s)}</code>`;
const refName = (ref: string) => ref.split('/').pop()!;
const link = (ref: string) => `<a href="#schema-${esc(refName(ref))}">${esc(refName(ref))}</a>`;

/** A short type of a schema: a link for a $ref, enums spelled out, unions joined. */
function typeOf(s: Json | undefined): string {
  if (!s) return 'any';
  if (s.$ref) return link(s.$ref);
  if (s.anyOf) return (s.anyOf as Json[]).map(typeOf).join(' or ');
  if (s.enum) return (s.enum as unknown[]).map(code).join(' | ');
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (s.type === 'array') return `array of ${typeOf(s.items)}`;
  if (s.type === 'object' && s.patternProperties) return 'object';
  return esc(s.format ? `${s.type} (${s.format})` : (s.type ?? 'any'));
}

function limits(s: Json): string {
  const parts: string[] = [];
  for (const k of ['minLength', 'maxLength', 'minItems', 'maxItems', 'minimum', 'maximum', 'pattern', 'default'])
    if (s[k] !== undefined) parts.push(`${k} ${code(s[k])}`);
  return parts.join(', ');
}

function propertiesTable(s: Json): string {
  const props = Object.entries<Json>(s.properties ?? {});
  if (!props.length) return `<p>${typeOf(s)} ${limits(s)}</p>`;
  const required = new Set<string>(s.required ?? []);
  const rows = props
    .map(
      ([name, p]) =>
        `<tr><td>${code(name)}${required.has(name) ? '' : ' <small>optional</small>'}</td><td>${typeOf(p)}</td>` +
        `<td>${esc(p.description ?? '')} ${limits(p)}</td></tr>`,
    )
    .join('');
  return `<table><thead><tr><th>Field</th><th>Type</th><th>Notes</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function operation(method: string, path: string, op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const paramRows = params
    .map(
      (p) =>
        `<tr><td>${code(p.name)}</td><td>${esc(p.in)}</td><td>${typeOf(p.schema)}</td><td>${esc(p.description ?? '')} ${limits(p.schema ?? {})}</td></tr>`,
    )
    .join('');
  const body = op.requestBody?.content?.['application/json']?.schema;
  const responses = Object.entries<Json>(op.responses ?? {})
    .map(([status, r]) => {
      const s = r.content?.['application/json']?.schema;
      return `<li>${code(status)} ${s ? typeOf(s) : esc(r.description ?? '')}</li>`;
    })
    .join('');
  const scopes = ((op.security ?? []) as Json[]).flatMap((x) => Object.values<string[]>(x).flat());
  const auth =
    op.security?.length === 0
      ? 'No key needed.'
      : scopes.length
        ? `Scope ${scopes.map(code).join(', ')}.`
        : 'Any key of the team.';
  return `<section class="op" id="op-${esc(op.operationId)}"><h3><span class="m">${esc(method.toUpperCase())}</span> ${code(path)}</h3>
<p>${esc(op.summary ?? '')} <small>(${code(op.operationId)})</small> ${auth}</p>
${paramRows ? `<table><thead><tr><th>Parameter</th><th>In</th><th>Type</th><th>Notes</th></tr></thead><tbody>${paramRows}</tbody></table>` : ''}
${body ? `<p>Body: ${typeOf(body)}</p>` : ''}<ul>${responses}</ul></section>`;
}

/** The reference page of `doc`. */
export function renderReference(doc: Json): string {
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries<Json>(doc.paths ?? {}))
    for (const [method, op] of Object.entries<Json>(ops)) {
      const tag = op.tags?.[0] ?? 'Other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), operation(method, path, op)]);
    }
  const sections = [...byTag].map(([tag, ops]) => `<h2 id="tag-${esc(tag)}">${esc(tag)}</h2>${ops.join('\n')}`);
  const hooks = Object.entries<Json>(doc.webhooks ?? {}).map(
    ([name, w]) => `<li>${code(name)}: ${typeOf(w.post?.requestBody?.content?.['application/json']?.schema)}</li>`,
  );
  const schemas = Object.entries<Json>(doc.components?.schemas ?? {}).map(
    ([name, s]) =>
      `<section id="schema-${esc(name)}"><h3>${esc(name)}</h3><p>${esc(s.description ?? '')}</p>${propertiesTable(s)}</section>`,
  );
  const toc = [...byTag.keys()].map((t) => `<a href="#tag-${esc(t)}">${esc(t)}</a>`).join(' · ');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(doc.info?.title ?? 'API')} reference</title><style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#111}
code{background:#f1f1f1;padding:0 .2em}table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .4rem;text-align:left;vertical-align:top}
.op{border-top:1px solid #ccc;padding-top:.5rem}.m{font-weight:700;color:#05a}section:target{background:#fff7d6}</style></head>
<body><main><h1>${esc(doc.info?.title ?? 'API')} ${esc(doc.info?.version ?? '')}</h1><p>${esc(doc.info?.description ?? '')}</p>
<p>The machine-readable document: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1). Errors: <a href="/docs/errors">/docs/errors</a>.</p>
<nav>${toc} · <a href="#webhooks">Webhook events</a> · <a href="#schemas">Schemas</a></nav>
${sections.join('\n')}
<h2 id="webhooks">Webhook events</h2><p>POSTed to subscribed endpoints, signed (Standard Webhooks headers).</p><ul>${hooks.join('')}</ul>
<h2 id="schemas">Schemas</h2>${schemas.join('\n')}</main></body></html>`;
}
