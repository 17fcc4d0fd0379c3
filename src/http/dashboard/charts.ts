// Server-rendered charts: line and stacked-bar charts as inline SVG (no script), each a <figure> whose SVG
// has a <title>/<desc>, axis labels and a legend, plus a data table in <details> so every number is readable.
import { html, type Html } from './html.js';

export interface Series {
  name: string;
  values: readonly number[];
  /** A stroke/fill colour with at least 3:1 contrast on white. */
  color: string;
  /** SVG stroke-dasharray: lines stay distinguishable without colour. */
  dash?: string;
}

export interface ChartOpts {
  /** Unique on the page: prefixes the ids of the title, description and caption. */
  id: string;
  title: string;
  /** One label per point (the data table's first column). */
  labels: readonly string[];
  /** The label under the x axis at point i, or null for none. */
  tick: (i: number) => string | null;
  xTitle: string;
  yTitle: string;
  series: readonly Series[];
  kind: 'line' | 'bar';
  /** How a value reads (axis, table and description); default: the integer. */
  format?: (n: number) => string;
  /** A horizontal reference line (e.g. the 0.3% complaint-rate limit). */
  threshold?: { value: number; label: string };
  small?: boolean;
}

/** Series colours (3:1 or more against white) with dash patterns, in the dashboard's status vocabulary. */
export const PALETTE = {
  sent: { color: '#1d4ed8' },
  delivered: { color: '#15803d', dash: '6 3' },
  delivery_delayed: { color: '#b45309', dash: '2 3' },
  deferred: { color: '#b45309', dash: '2 3' },
  bounced: { color: '#b91c1c', dash: '10 3 2 3' },
  complained: { color: '#7e22ce', dash: '1 2' },
} as const;

const TEXT = '#374151';
const GRID = '#d1d5db';
const integer = (n: number) => String(Math.round(n));

/** The y axis' top: four round steps (1, 2, 2.5 or 5 × 10^k; whole numbers for counts) reaching at least `max`. */
export function niceMax(max: number, integer = false): number {
  if (!(max > 0)) return 4;
  const raw = max / 4;
  if (integer && raw <= 1) return 4;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of integer ? [1, 2, 5, 10] : [1, 2, 2.5, 5, 10]) if (m * p >= raw) return 4 * m * p;
  return 40 * p;
}

interface Frame {
  w: number;
  h: number;
  left: number;
  top: number;
  pw: number;
  ph: number;
  max: number;
  n: number;
}

function frame(o: ChartOpts): Frame {
  const [w, h] = o.small ? [360, 170] : [560, 240];
  const left = o.small ? 44 : 60;
  const top = 12;
  const bottom = o.small ? 34 : 44;
  const stacked = o.kind === 'bar';
  const n = o.labels.length;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const vals = o.series.map((s) => s.values[i] ?? 0);
    max = Math.max(max, stacked ? vals.reduce((a, b) => a + b, 0) : Math.max(0, ...vals));
  }
  if (o.threshold) max = Math.max(max, o.threshold.value * 1.5);
  return { w, h, left, top, pw: w - left - 20, ph: h - top - bottom, max: niceMax(max, !o.format), n };
}

const yOf = (f: Frame, v: number) => f.top + f.ph - (v / f.max) * f.ph;
const xOf = (f: Frame, i: number) => f.left + (f.n <= 1 ? f.pw / 2 : (i * f.pw) / (f.n - 1));

function axes(o: ChartOpts, f: Frame): Html {
  const fmt = o.format ?? integer;
  const fs = o.small ? 11 : 12;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((k) => k * f.max);
  const band = f.pw / Math.max(1, f.n);
  const xAt = (i: number) => (o.kind === 'bar' ? f.left + band * (i + 0.5) : xOf(f, i));
  return html`<g aria-hidden="true" font-size="${fs}" fill="${TEXT}">
    ${ticks.map(
      (t) =>
        html`<line x1="${f.left}" x2="${f.left + f.pw}" y1="${yOf(f, t)}" y2="${yOf(f, t)}" stroke="${GRID}" /><text
            x="${f.left - 4}"
            y="${yOf(f, t) + 4}"
            text-anchor="end"
          >
            ${fmt(t)}
          </text>`,
    )}
    ${o.labels.map((_, i) => {
      const t = o.tick(i);
      return t === null ? '' : html`<text x="${xAt(i)}" y="${f.top + f.ph + fs + 4}" text-anchor="middle">${t}</text>`;
    })}
    <text x="${f.left + f.pw / 2}" y="${f.h - 4}" text-anchor="middle">${o.xTitle}</text>
    <text x="12" y="${f.top + f.ph / 2}" text-anchor="middle" transform="rotate(-90 12 ${f.top + f.ph / 2})">
      ${o.yTitle}
    </text>
    <line x1="${f.left}" x2="${f.left + f.pw}" y1="${f.top + f.ph}" y2="${f.top + f.ph}" stroke="${TEXT}" />
  </g>`;
}

function lines(o: ChartOpts, f: Frame): Html {
  return html`${o.series.map((s) => {
    const pts = o.labels.map((_, i) => `${xOf(f, i).toFixed(1)},${yOf(f, s.values[i] ?? 0).toFixed(1)}`).join(' ');
    return html`<polyline
      points="${pts}"
      fill="none"
      stroke="${s.color}"
      stroke-width="2"
      stroke-dasharray="${s.dash ?? 'none'}"
      data-series="${s.name}"
    />`;
  })}`;
}

function bars(o: ChartOpts, f: Frame): Html {
  const band = f.pw / Math.max(1, f.n);
  const w = Math.max(1, band * 0.7);
  const out: Html[] = [];
  for (let i = 0; i < f.n; i++) {
    let base = 0;
    for (const s of o.series) {
      const v = s.values[i] ?? 0;
      if (v <= 0) continue;
      const y = yOf(f, base + v);
      const hgt = yOf(f, base) - y;
      out.push(
        html`<rect
          x="${(f.left + band * i + (band - w) / 2).toFixed(1)}"
          y="${y.toFixed(1)}"
          width="${w.toFixed(1)}"
          height="${hgt.toFixed(1)}"
          fill="${s.color}"
          data-series="${s.name}"
        />`,
      );
      base += v;
    }
  }
  return html`${out}`;
}

function threshold(o: ChartOpts, f: Frame): Html | string {
  if (!o.threshold) return '';
  const y = yOf(f, o.threshold.value);
  return html`<g aria-hidden="true"
    ><line x1="${f.left}" x2="${f.left + f.pw}" y1="${y}" y2="${y}" stroke="#111827" stroke-dasharray="4 4" /><text
      x="${f.left + f.pw - 4}"
      y="${y - 4}"
      text-anchor="end"
      font-size="${o.small ? 10 : 12}"
      fill="#111827"
    >
      ${o.threshold.label}
    </text></g
  >`;
}

/** One sentence per series: total and peak (the SVG's <desc>). */
export function describe(o: ChartOpts): string {
  const fmt = o.format ?? integer;
  const parts = o.series.map((s) => {
    let peak = 0;
    for (let i = 1; i < s.values.length; i++) if ((s.values[i] ?? 0) > (s.values[peak] ?? 0)) peak = i;
    const total = s.values.reduce((a, b) => a + b, 0);
    const top = s.values[peak] ?? 0;
    const sum = o.format ? '' : `total ${fmt(total)}, `;
    return `${s.name}: ${sum}highest ${fmt(top)}${top > 0 ? ` (${o.labels[peak]})` : ''}`;
  });
  const limit = o.threshold ? ` Reference line: ${o.threshold.label}.` : '';
  return `${o.title}, ${o.labels[0] ?? ''} to ${o.labels[o.labels.length - 1] ?? ''}. ${parts.join('; ')}.${limit}`;
}

function swatch(o: ChartOpts, s: Series): Html {
  return o.kind === 'bar'
    ? html`<rect x="6" y="0" width="12" height="12" fill="${s.color}" />`
    : html`<line
        x1="0"
        x2="24"
        y1="6"
        y2="6"
        stroke="${s.color}"
        stroke-width="3"
        stroke-dasharray="${s.dash ?? 'none'}"
      />`;
}

function legend(o: ChartOpts): Html {
  return html`<ul class="legend">
    ${o.series.map(
      (s) =>
        html`<li>
          <svg width="24" height="12" aria-hidden="true" focusable="false">${swatch(o, s)}</svg>
          ${s.name}
        </li>`,
    )}
  </ul>`;
}

function table(o: ChartOpts): Html {
  const fmt = o.format ?? integer;
  return html`<details class="chart-data">
    <summary>Numbers: ${o.title}</summary>
    <div class="table-wrap" role="region" aria-label="${o.title}: numbers" tabindex="0">
      <table>
        <caption class="sr-only">
          ${o.title}
        </caption>
        <thead>
          <tr>
            <th scope="col">${o.xTitle}</th>
            ${o.series.map((s) => html`<th scope="col">${s.name}</th>`)}
          </tr>
        </thead>
        <tbody>
          ${o.labels.map(
            (l, i) =>
              html`<tr>
                <th scope="row">${l}</th>
                ${o.series.map((s) => html`<td>${fmt(s.values[i] ?? 0)}</td>`)}
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </details>`;
}

/** A chart as a <figure>: the SVG (role img, named by its title, described by a summary), legend, data table. */
export function chart(o: ChartOpts): Html {
  const f = frame(o);
  const body = o.kind === 'bar' ? bars(o, f) : lines(o, f);
  return html`<figure class="chart${o.small ? ' small' : ''}" id="${o.id}" aria-labelledby="${o.id}-cap">
    <figcaption id="${o.id}-cap">${o.title}</figcaption>
    <svg
      viewBox="0 0 ${f.w} ${f.h}"
      width="100%"
      role="img"
      aria-labelledby="${o.id}-t"
      aria-describedby="${o.id}-d"
      focusable="false"
      font-family="system-ui, sans-serif"
    >
      <title id="${o.id}-t">${o.title}</title>
      <desc id="${o.id}-d">${describe(o)}</desc>
      ${axes(o, f)}${body}${threshold(o, f)}
    </svg>
    ${legend(o)}${table(o)}
  </figure>`;
}

/** A percentage with up to two decimals (0.003 → "0.3%"). */
export const percent = (x: number) => `${Number((x * 100).toFixed(2))}%`;
