// CI check (`npx tsx scripts/check-regex.ts`): every regular expression of the inbound reader, the provider
// registry and the reply/bounce rules is run through recheck; exits 1 naming each one it finds vulnerable to ReDoS.
// `--update` records the regexes judged safe (scripts/regex-checked.json: CI checks only new or changed ones),
// `--all` checks every one again.
//
// Regexes are found two ways: regex literals and `new RegExp(<constant>)` in the source (TypeScript AST),
// and RegExp objects reachable from each module's exports (tables built with `new RegExp(template)`).
// A `new RegExp` built at run time must sit in an exported table or be listed in DYNAMIC with a reason.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { check } from 'recheck';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const CORE_RULES = ['reply-rules', 'classify', 'bounce-reasons', 'address'].map((f) => `src/core/${f}.ts`);
/** Folders whose every module is scanned: the inbound reader and the provider registry. */
const FOLDERS = ['src/inbound', 'src/core/providers'];
/** Runtime-built regexes that are not in an exported table: file and a snippet of the call, and why they are safe. */
const DYNAMIC: readonly { file: string; snippet: string; why: string }[] = [];
const PER_PATTERN_MS = Number(process.env.CHECK_REGEX_TIMEOUT_MS ?? 10_000);

interface Found {
  where: string;
  source: string;
  flags: string;
}

function files(): string[] {
  const inFolders = FOLDERS.flatMap((dir) =>
    (fs.readdirSync(path.join(ROOT, dir), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts'))
      .map((f) => `${dir}/${f}`),
  );
  return [...inFolders, ...CORE_RULES].sort();
}

function isExportedTable(node: ts.Node): boolean {
  for (let n: ts.Node | undefined = node; n; n = n.parent) {
    if (ts.isFunctionLike(n)) return false;
    if (ts.isVariableStatement(n)) return !!n.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  }
  return false;
}

/** Literal regexes of one file; throws on a runtime-built one that neither an export nor DYNAMIC covers. */
function scanSource(file: string): Found[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out: Found[] = [];
  const where = (n: ts.Node) => `${file}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`;
  const visit = (n: ts.Node): void => {
    if (n.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const lit = n.getText(sf);
      const cut = lit.lastIndexOf('/');
      out.push({ where: where(n), source: lit.slice(1, cut), flags: lit.slice(cut + 1) });
    } else if ((ts.isNewExpression(n) || ts.isCallExpression(n)) && n.expression.getText(sf) === 'RegExp') {
      const [src, flags] = n.arguments ?? [];
      if (src && (ts.isStringLiteral(src) || ts.isNoSubstitutionTemplateLiteral(src))) {
        out.push({ where: where(n), source: src.text, flags: flags && ts.isStringLiteral(flags) ? flags.text : '' });
      } else if (!isExportedTable(n) && !DYNAMIC.some((d) => d.file === file && n.getText(sf).includes(d.snippet))) {
        throw new Error(
          `${where(n)}: a RegExp built at run time outside an exported table; export it or list it in DYNAMIC`,
        );
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** RegExp objects reachable from a module's exports (arrays, plain objects, Maps), with the export's name. */
async function scanExports(file: string): Promise<Found[]> {
  const mod = (await import(pathToFileURL(path.join(ROOT, file)).href)) as Record<string, unknown>;
  const out: Found[] = [];
  const seen = new Set<unknown>();
  const walk = (v: unknown, name: string, depth: number): void => {
    if (v instanceof RegExp) {
      out.push({ where: `${file} export ${name}`, source: v.source, flags: v.flags });
      return;
    }
    if (!v || typeof v !== 'object' || seen.has(v) || depth > 8) return;
    seen.add(v);
    const entries = v instanceof Map ? [...v.entries()] : Object.entries(v);
    for (const [k, x] of entries) {
      walk(k, name, depth + 1);
      walk(x, `${name}.${String(k)}`, depth + 1);
    }
  };
  for (const [name, v] of Object.entries(mod)) walk(v, name, 0);
  return out;
}

/**
 * Regexes recheck already judged safe (`--update` writes it): a regex whose source and flags are listed with the same
 * recheck version is not checked again, so CI checks only new or changed ones (recheck takes ~75 s for all 325).
 */
const CHECKED = path.join(ROOT, 'scripts/regex-checked.json');
const RECHECK_VERSION = (
  JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/recheck/package.json'), 'utf8')) as { version: string }
).version;
const digest = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 32);
function checkedBefore(): Set<string> {
  if (process.argv.includes('--all') || !fs.existsSync(CHECKED)) return new Set();
  const c = JSON.parse(fs.readFileSync(CHECKED, 'utf8')) as { recheck: string; safe: string[] };
  return c.recheck === RECHECK_VERSION ? new Set(c.safe) : new Set();
}

async function main(): Promise<number> {
  const all = new Map<string, Found>();
  for (const f of files())
    for (const r of [...scanSource(f), ...(await scanExports(f))])
      all.set(`/${r.source}/${r.flags}`, all.get(`/${r.source}/${r.flags}`) ?? r);
  const started = Date.now();
  let bad = 0;
  let unknown = 0;
  const known = checkedBefore();
  const entries = [...all].filter(([key]) => !known.has(digest(key)));
  const results: { key: string; r: Found; d: Awaited<ReturnType<typeof check>> }[] = [];
  // recheck's native agent answers several checks at once; 4 at a time roughly halves the wall time
  for (let i = 0; i < entries.length; i += 4) {
    results.push(
      ...(await Promise.all(
        entries
          .slice(i, i + 4)
          .map(async ([key, r]) => ({ key, r, d: await check(r.source, r.flags, { timeout: PER_PATTERN_MS }) })),
      )),
    );
  }
  for (const { key, r, d } of results) {
    if (d.status === 'vulnerable') {
      bad++;
      console.error(
        `VULNERABLE (${d.complexity.type}${d.complexity.type === 'polynomial' ? ` ${d.complexity.degree}` : ''}) ${r.where}: ${key}`,
      );
    } else if (d.status === 'unknown') {
      unknown++;
      console.warn(`warning: could not decide (${d.error.kind}) ${r.where}: ${key}`);
    }
  }
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const skipped = all.size - entries.length;
  console.log(
    `check-regex: ${all.size} regexes (${skipped} judged safe before), ${bad} vulnerable, ${unknown} undecided (${secs} s)`,
  );
  if (process.argv.includes('--update')) {
    const safe = [...all.keys()]
      .filter((k) => known.has(digest(k)) || results.some((x) => x.key === k && x.d.status === 'safe'))
      .map(digest)
      .sort();
    fs.writeFileSync(CHECKED, `${JSON.stringify({ recheck: RECHECK_VERSION, safe }, null, 2)}\n`);
  }
  return bad ? 1 : 0;
}

process.exitCode = await main();
