// The layering holds: no SQL outside src/store/ (SQL keywords in string literals, sql()/prepare/exec on a
// database), and dependency-cruiser (.dependency-cruiser.cjs) reports no error. Reads the real source tree.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** SQL statements as this code base writes them (upper-case keywords; prose like "delete from" does not match). */
const SQL =
  /\bSELECT\b[\s\S]*\bFROM\b|\bINSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|\b(?:CREATE|DROP|ALTER)\s+(?:TABLE|INDEX|VIEW|TRIGGER)\b|\bPRAGMA\s+\w/;
/** A receiver that is a database handle: `db`, `ctx.db`, `this.ctx.db`, `database`… */
const DB_RECEIVER = /(^|\.)(db|database)$/i;
const DB_METHODS = new Set(['prepare', 'exec', 'pragma', 'transaction']);

export interface SqlFinding {
  file: string;
  line: number;
  what: string;
}

function lineOf(sf: ts.SourceFile, node: ts.Node): number {
  return sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
}

/** The SQL-looking strings and database calls in one TypeScript source text. */
export function findSql(file: string, text: string): SqlFinding[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: SqlFinding[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      if (SQL.test(node.text))
        found.push({ file, line: lineOf(sf, node), what: `SQL string ${JSON.stringify(node.text.slice(0, 60))}` });
    } else if (ts.isTemplateExpression(node)) {
      const whole = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' ');
      if (SQL.test(whole))
        found.push({ file, line: lineOf(sf, node), what: `SQL template ${JSON.stringify(whole.slice(0, 60))}` });
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isIdentifier(callee) && callee.text === 'sql')
        found.push({ file, line: lineOf(sf, node), what: 'sql(...) call' });
      if (
        ts.isPropertyAccessExpression(callee) &&
        DB_METHODS.has(callee.name.text) &&
        DB_RECEIVER.test(callee.expression.getText(sf))
      ) {
        found.push({ file, line: lineOf(sf, node), what: `${callee.getText(sf)}(...) on a database` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

describe('architecture: the layering', () => {
  it('finds SQL strings and database calls (the check itself can fail)', () => {
    const sample = [
      "const a = sql(db, 'SELECT 1 FROM events WHERE id = ?');",
      'const b = `UPDATE deliveries SET status = ${s} WHERE id = ?`;',
      "ctx.db.prepare('x'); this.ctx.db.exec('y'); /^a$/.exec('a');",
      "const msg = 'Delete from the list, then select the next one';",
      '// SELECT * FROM comments is not code',
    ].join('\n');
    const whats = findSql('sample.ts', sample).map((f) => `${f.line}:${f.what.split(' ')[0]}`);
    expect(whats).to.deep.equal(['1:sql(...)', '1:SQL', '2:SQL', '3:ctx.db.prepare(...)', '3:this.ctx.db.exec(...)']);
  });

  it('has no SQL outside src/store/', () => {
    const files = tsFiles(path.join(ROOT, 'src')).filter(
      (f) => !path.relative(ROOT, f).startsWith(`src${path.sep}store${path.sep}`),
    );
    const found = files.flatMap((f) => findSql(path.relative(ROOT, f), fs.readFileSync(f, 'utf8')));
    expect(found.map((f) => `${f.file}:${f.line} ${f.what}`)).to.deep.equal([]);
  });

  it('keeps the dependency rule (dependency-cruiser reports no error)', async function () {
    this.timeout(120_000);
    const bin = path.join(ROOT, 'node_modules', '.bin', 'depcruise');
    const run = promisify(execFile);
    const args = ['src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'];
    // depcruise exits non-zero when it finds errors; its JSON report is on stdout either way.
    const { stdout } = await run(bin, args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }).catch(
      (err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }),
    );
    const report = JSON.parse(stdout) as {
      summary: { violations: { from: string; to: string; rule: { name: string; severity: string } }[] };
    };
    const errors = report.summary.violations
      .filter((v) => v.rule.severity === 'error')
      .map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
    expect(errors).to.deep.equal([]);
  });
});
