// Reading of one DMARC aggregate report's XML (RFC 7489 appendix C, and the RFC 9990 schema with its namespace,
// `np`, `testing`, `discovery_method` and `generator`). Pure: the text is already decompressed, capped and known to
// be UTF-8 (src/inbound/dmarc.ts). htmlparser2 in XML mode reads it in one pass: it never reads a DTD nor expands
// an entity other than the five XML ones and character references, and the caller refuses any DOCTYPE first.
import { isIP } from 'node:net';
import { Parser } from 'htmlparser2';

export type Disposition = 'none' | 'quarantine' | 'reject' | 'pass';
export type Verdict = 'pass' | 'fail';

export interface DmarcPolicy {
  domain: string;
  adkim: string | null;
  aspf: string | null;
  p: string | null;
  sp: string | null;
  /** RFC 9990: policy for non-existent subdomains */
  np: string | null;
  pct: number | null;
  fo: string | null;
  /** RFC 9990: `y` when the domain's policy is in test mode */
  testing: string | null;
  /** RFC 9990: `psl` or `treewalk` */
  discovery_method: string | null;
}

export interface DmarcAuthDkim {
  domain: string | null;
  selector: string | null;
  result: string | null;
}
export interface DmarcAuthSpf {
  domain: string | null;
  scope: string | null;
  result: string | null;
}

export interface DmarcRow {
  source_ip: string;
  count: number;
  disposition: Disposition | null;
  /** policy_evaluated: DKIM passed and aligned with header_from */
  dkim_aligned: boolean;
  /** policy_evaluated: SPF passed and aligned with header_from */
  spf_aligned: boolean;
  dmarc_pass: boolean;
  reasons: { type: string | null; comment: string | null }[];
  header_from: string | null;
  envelope_from: string | null;
  envelope_to: string | null;
  dkim: DmarcAuthDkim[];
  spf: DmarcAuthSpf[];
}

export interface DmarcReport {
  /** `rfc9990` when the root element is in the urn:ietf:params:xml:ns:dmarc-2.0 namespace */
  schema: 'rfc7489' | 'rfc9990';
  version: string | null;
  org_name: string;
  email: string | null;
  extra_contact_info: string | null;
  report_id: string;
  /** Unix seconds, as in the report */
  begin: number;
  end: number;
  errors: string[];
  /** RFC 9990: the software that wrote the report */
  generator: string | null;
  policy: DmarcPolicy;
  records: DmarcRow[];
  /** rows left out: malformed (no valid source IP or count) or past MAX_ROWS */
  skipped: number;
}

/** Why a message to dmarc@ could not be read (it is kept in inbound_reports for the operator). */
export type DmarcError =
  | 'no_report'
  | 'too_large'
  | 'corrupt'
  | 'nested_archive'
  | 'charset'
  | 'dtd'
  | 'not_dmarc'
  | 'truncated'
  | 'timeout'
  | 'failed';
export type DmarcFormat = 'xml' | 'gzip' | 'zip';
/** The reading of one message sent to dmarc@ (src/inbound/dmarc.ts, in the parse worker). */
export type DmarcReading =
  | { ok: true; report: DmarcReport; format: DmarcFormat; attachment: boolean }
  | { ok: false; error: DmarcError; detail: string };
/** Reads a message sent to dmarc@: the listener's parse pool; `truncated` when only its first bytes were kept. */
export type DmarcParser = (raw: Buffer, truncated: boolean) => Promise<DmarcReading>;

export type DmarcXmlResult = { ok: true; report: DmarcReport } | { ok: false; error: 'not_dmarc'; detail: string };

/** Rows read from one report; the rest are counted in `skipped`. */
export const MAX_ROWS = 20_000;
/** Deepest element nesting read (a report needs 5); deeper content is ignored. */
const MAX_DEPTH = 12;
/** Characters kept of one element's text. */
const TEXT_CAP = 1024;
/** Auth results and reasons kept per row. */
const MAX_PER_ROW = 16;

export const RFC9990_NS = 'urn:ietf:params:xml:ns:dmarc-2.0';

interface Node {
  name: string;
  text: string;
  children: Node[];
}

const child = (n: Node | undefined, name: string) => n?.children.find((c) => c.name === name);
const all = (n: Node | undefined, name: string) => n?.children.filter((c) => c.name === name) ?? [];
const text = (n: Node | undefined, name: string): string | null => {
  const t = child(n, name)?.text.trim();
  return t ? t : null;
};
const lower = (s: string | null) => (s === null ? null : s.toLowerCase());
/** The local name of an element (`dmarc:feedback` → `feedback`), lower-cased. */
const local = (name: string) => name.slice(name.indexOf(':') + 1).toLowerCase();

function integer(s: string | null): number | null {
  if (s === null || !/^\d{1,15}$/.test(s)) return null;
  return Number(s);
}

function verdict(s: string | null): Verdict | null {
  const v = lower(s);
  return v === 'pass' || v === 'fail' ? v : null;
}

function disposition(s: string | null): Disposition | null {
  const v = lower(s);
  return v === 'none' || v === 'quarantine' || v === 'reject' || v === 'pass' ? v : null;
}

/** One <record> as a row; null when it has no valid source IP or count. */
function readRow(rec: Node): DmarcRow | null {
  const row = child(rec, 'row');
  const ip = text(row, 'source_ip');
  const count = integer(text(row, 'count'));
  if (!ip || !isIP(ip) || count === null) return null;
  const pe = child(row, 'policy_evaluated');
  const ids = child(rec, 'identifiers');
  const auth = child(rec, 'auth_results');
  const dkimAligned = verdict(text(pe, 'dkim')) === 'pass';
  const spfAligned = verdict(text(pe, 'spf')) === 'pass';
  return {
    source_ip: ip.toLowerCase(),
    count,
    disposition: disposition(text(pe, 'disposition')),
    dkim_aligned: dkimAligned,
    spf_aligned: spfAligned,
    dmarc_pass: dkimAligned || spfAligned,
    reasons: all(pe, 'reason')
      .slice(0, MAX_PER_ROW)
      .map((r) => ({ type: lower(text(r, 'type')), comment: text(r, 'comment') })),
    header_from: lower(text(ids, 'header_from')),
    envelope_from: lower(text(ids, 'envelope_from')),
    envelope_to: lower(text(ids, 'envelope_to')),
    dkim: all(auth, 'dkim')
      .slice(0, MAX_PER_ROW)
      .map((d) => ({
        domain: lower(text(d, 'domain')),
        selector: text(d, 'selector'),
        result: lower(text(d, 'result')),
      })),
    spf: all(auth, 'spf')
      .slice(0, MAX_PER_ROW)
      .map((d) => ({
        domain: lower(text(d, 'domain')),
        scope: lower(text(d, 'scope')),
        result: lower(text(d, 'result')),
      })),
  };
}

function readPolicy(pp: Node | undefined): DmarcPolicy | null {
  const domain = lower(text(pp, 'domain'))?.replace(/\.$/, '');
  if (!domain) return null;
  return {
    domain,
    adkim: lower(text(pp, 'adkim')),
    aspf: lower(text(pp, 'aspf')),
    p: lower(text(pp, 'p')),
    sp: lower(text(pp, 'sp')),
    np: lower(text(pp, 'np')),
    pct: integer(text(pp, 'pct')),
    fo: text(pp, 'fo'),
    testing: lower(text(pp, 'testing')),
    discovery_method: lower(text(pp, 'discovery_method')),
  };
}

interface Tree {
  root: Node | null;
  namespace: string | null;
  rows: DmarcRow[];
  skipped: number;
}

/**
 * Reads the XML into a small tree, except that each <record> (a child of the root) becomes a row as soon as it
 * closes and is not kept: memory stays proportional to the rows, not to the elements.
 */
function readTree(xml: string): Tree {
  const tree: Tree = { root: null, namespace: null, rows: [], skipped: 0 };
  const stack: Node[] = [];
  let ignored = 0; // open elements deeper than MAX_DEPTH
  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (ignored || stack.length >= MAX_DEPTH) return void ignored++;
        const node: Node = { name: local(name), text: '', children: [] };
        if (!stack.length && !tree.root) {
          tree.root = node;
          const ns = Object.entries(attrs).filter(([k]) => k === 'xmlns' || k.startsWith('xmlns:'));
          tree.namespace = (ns.find(([, v]) => v === RFC9990_NS) ?? ns.find(([k]) => k === 'xmlns'))?.[1] ?? null;
        } else stack[stack.length - 1]?.children.push(node);
        stack.push(node);
      },
      ontext(t) {
        const top = stack[stack.length - 1];
        if (!ignored && top && top.text.length < TEXT_CAP) top.text = (top.text + t).slice(0, TEXT_CAP);
      },
      onclosetag() {
        if (ignored) return void ignored--;
        const node = stack.pop();
        if (!node || node.name !== 'record' || stack.length !== 1) return;
        const parent = stack[0] as Node;
        parent.children.pop(); // the record just read
        const row = tree.rows.length < MAX_ROWS ? readRow(node) : null;
        if (row) tree.rows.push(row);
        else tree.skipped++;
      },
    },
    { xmlMode: true, decodeEntities: true, recognizeSelfClosing: true },
  );
  parser.end(xml);
  return tree;
}

/** Reads one aggregate report's XML; `not_dmarc` when it is not one (or lacks what every report must say). */
export function readDmarcXml(xml: string): DmarcXmlResult {
  const tree = readTree(xml);
  const root = tree.root;
  if (!root || root.name !== 'feedback') return { ok: false, error: 'not_dmarc', detail: 'no <feedback> element' };
  const meta = child(root, 'report_metadata');
  const range = child(meta, 'date_range');
  const org = text(meta, 'org_name');
  const id = text(meta, 'report_id');
  const begin = integer(text(range, 'begin'));
  const end = integer(text(range, 'end'));
  const policy = readPolicy(child(root, 'policy_published'));
  if (!org || !id || begin === null || end === null || !policy)
    return {
      ok: false,
      error: 'not_dmarc',
      detail: 'a report needs org_name, report_id, date_range and policy_published/domain',
    };
  return {
    ok: true,
    report: {
      schema: tree.namespace === RFC9990_NS ? 'rfc9990' : 'rfc7489',
      version: text(root, 'version'),
      org_name: org,
      email: text(meta, 'email'),
      extra_contact_info: text(meta, 'extra_contact_info'),
      report_id: id,
      begin,
      end,
      errors: all(meta, 'error')
        .slice(0, MAX_PER_ROW)
        .map((e) => e.text.trim()),
      generator: text(meta, 'generator'),
      policy,
      records: tree.rows,
      skipped: tree.skipped,
    },
  };
}

/** Messages a report covers: the sum of its rows' counts. */
export const messagesOf = (r: Pick<DmarcReport, 'records'>) => r.records.reduce((n, row) => n + row.count, 0);
