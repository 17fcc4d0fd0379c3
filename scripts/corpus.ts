// `npm run corpus`: reads every labelled Sisimai sample of test/fixtures/sisimai and prints, per family and overall,
// the share of samples where parseReport agrees with Sisimai on kind, recipients found, hard/soft and reason; then
// the same table for the held-out set (test/fixtures/held-out: real bounces from outside Sisimai's corpus, labelled by
// Sisimai's rules; see its SOURCES.md).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseReport, type Report } from '../src/inbound/parse.js';

export interface SampleLabel {
  file: string;
  family: string;
  table: string;
  recipients: { address?: string; status: string | null; replycode: string | null; reason: string; hard: boolean }[];
}
export const FIGURES = ['kind', 'recipients', 'hard', 'reason'] as const;
export type Figure = (typeof FIGURES)[number];
export interface SampleResult {
  file: string;
  family: string;
  agrees: Record<Figure, boolean>;
  expected: string;
  got: string;
}
export interface Tally {
  samples: number;
  agree: Record<Figure | 'all', number>;
}

/**
 * Samples where Sisimai's label is judged wrong (file → why). They stay misses in every figure; listed here so the
 * report shows them apart from the reader's own misses.
 */
export const DISPUTED: Record<string, string> = {};

const DIR = fileURLToPath(new URL('../test/fixtures/sisimai/', import.meta.url));
/** Real bounces from public sources other than Sisimai's set-of-emails (never used to write a rule). */
export const HELD_OUT_DIR = fileURLToPath(new URL('../test/fixtures/held-out/', import.meta.url));

export function loadLabels(dir = DIR): SampleLabel[] {
  return JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as SampleLabel[];
}

function expectedKind(label: SampleLabel): string {
  const reasons = label.recipients.map((r) => r.reason);
  if (reasons.includes('feedback')) return 'arf';
  if (reasons.includes('vacation')) return 'other';
  return 'dsn';
}

const show = (xs: { reason: string; hard: boolean | null }[]) =>
  xs.map((r) => `${r.reason}/${r.hard ? 'hard' : 'soft'}`);

/** Sisimai's stand-in when a complaint names no recipient; the reader leaves the address null. */
const NO_ADDRESS = 'undisclosed-recipient-in-headers@libsisimai.org.invalid';
const normal = (a: string | null | undefined) => (a && a.toLowerCase() !== NO_ADDRESS ? a.toLowerCase() : '');

/**
 * The recipients figure: as many recipients as Sisimai found and, where the label names them (the held-out set),
 * the same addresses (case-insensitive, in any order).
 */
function sameRecipients(label: SampleLabel, report: Report): boolean {
  const exp = label.recipients;
  if (report.recipients.length !== exp.length) return false;
  if (!exp.every((r) => typeof r.address === 'string')) return true;
  const left = exp.map((r) => normal(r.address));
  // each recipient read takes one expected address: its Final-Recipient or its Original-Recipient
  return report.recipients.every((r) => {
    const i = left.findIndex((a) => a === normal(r.address) || (a !== '' && a === normal(r.original_recipient)));
    return i >= 0 && left.splice(i, 1).length === 1;
  });
}

export function compare(label: SampleLabel, report: Report): SampleResult {
  const exp = label.recipients;
  const got = report.recipients;
  const same = <T>(a: T[], b: T[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  const agrees = {
    kind: report.kind === expectedKind(label),
    recipients: sameRecipients(label, report),
    hard: same(
      got.map((r) => r.hard === true),
      exp.map((r) => r.hard),
    ),
    reason: same(
      got.map((r) => r.reason),
      exp.map((r) => r.reason),
    ),
  };
  return {
    file: label.file,
    family: label.family,
    agrees,
    expected: `${expectedKind(label)} ${show(exp).join(',')}`,
    got: `${report.kind} ${show(got).join(',')}`,
  };
}

export async function measure(dir = DIR): Promise<SampleResult[]> {
  const results: SampleResult[] = [];
  for (const label of loadLabels(dir)) results.push(compare(label, await parseReport(readFileSync(dir + label.file))));
  return results;
}

export function tally(results: SampleResult[]): Tally {
  const t: Tally = { samples: results.length, agree: { kind: 0, recipients: 0, hard: 0, reason: 0, all: 0 } };
  for (const r of results) {
    for (const f of FIGURES) if (r.agrees[f]) t.agree[f] += 1;
    if (FIGURES.every((f) => r.agrees[f])) t.agree.all += 1;
  }
  return t;
}

export const share = (t: Tally, f: Figure | 'all'): number => (t.samples ? (100 * t.agree[f]) / t.samples : 100);

function row(name: string, t: Tally): string {
  const cells = [...FIGURES, 'all' as const].map((f) => `${share(t, f).toFixed(1)}%`);
  return `| ${name} | ${t.samples} | ${cells.join(' | ')} |`;
}

export function table(results: SampleResult[]): string {
  const families = [...new Set(results.map((r) => r.family))].sort((a, b) => a.localeCompare(b));
  const lines = [
    '| Family | Samples | Kind | Recipients | Hard/soft | Reason | All four |',
    '|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const f of families) lines.push(row(f, tally(results.filter((r) => r.family === f))));
  // per folder: Sisimai's line-end copies (bsd, dos, mac), the held-out set's sources
  for (const v of [...new Set(results.map((r) => r.file.split('/')[0] as string))]) {
    const same = results.filter((r) => r.file.startsWith(`${v}/`));
    const name = ['bsd', 'dos', 'mac'].includes(v) ? `${v} line ends` : `${v}/`;
    if (same.length < results.length) lines.push(row(`(${name})`, tally(same)));
  }
  lines.push(row('**Overall**', tally(results)));
  return lines.join('\n');
}

function report(title: string, results: SampleResult[]): void {
  console.log(`## ${title}\n\n${table(results)}`);
  const misses = results.filter((r) => !FIGURES.every((f) => r.agrees[f]));
  if (misses.length) console.log(`\nMisses (${misses.length}):`);
  for (const m of misses) {
    const why = DISPUTED[m.file.replace(/^[\w-]+\//, '')];
    console.log(`  ${m.file}: expected ${m.expected}; got ${m.got}${why ? ` (Sisimai judged wrong: ${why})` : ''}`);
  }
}

async function main(): Promise<void> {
  report("Sisimai's samples", await measure());
  console.log('');
  report("Held-out (real bounces outside Sisimai's corpus)", await measure(HELD_OUT_DIR));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
