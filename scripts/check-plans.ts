// CI check (`npx tsx scripts/check-plans.ts`): a call whose answer is a store plan (a Generator, src/store/op.ts)
// or a Promise must not be dropped. A plan left unrun does nothing at all (the write it describes never happens);
// a promise left unawaited turns its error into an unhandled rejection. Flags every expression statement whose type
// is one of them, unless it is written `void …` (a promise meant to run on its own, with its own catch), and every
// `expect(x)` whose x is one of them (a test asserting on the wrapper, not the answer).
// Exits 1 naming each place. Type-aware, so it builds the TypeScript program of tsconfig.json; with `--typecheck`
// it also reports that program's type errors, as `tsc --noEmit -p .` does (CI builds the program once).
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const FLAGGED = new Set(['Generator', 'Promise']);

function program(): { program: ts.Program; configErrors: readonly ts.Diagnostic[] } {
  const file = ts.findConfigFile(ROOT, ts.sys.fileExists, 'tsconfig.json')!;
  const config = ts.readConfigFile(file, ts.sys.readFile).config;
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  return { program: ts.createProgram(parsed.fileNames, parsed.options), configErrors: parsed.errors };
}

/**
 * `--typecheck` (CI, .ci/run): also what `tsc --noEmit -p .` reports, from the same program, so that CI builds it once
 * (~40 CPU-s each, measured in session 20). Exits 1 on any error, after the plans' check has run.
 */
function typeErrors(p: ts.Program, configErrors: readonly ts.Diagnostic[]): number {
  const diags = [...configErrors, ...ts.getPreEmitDiagnostics(p)];
  if (diags.length === 0) return 0;
  const host: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => ROOT,
    getNewLine: () => '\n',
  };
  const format = process.stderr.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  console.error(format(diags, host));
  const errors = diags.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
  console.error(`typecheck: ${errors} error(s)`);
  return errors;
}

/** The type's name, or a flagged name of one of its union members (a `Promise<T> | undefined` is still a promise). */
function flaggedName(checker: ts.TypeChecker, type: ts.Type): string | undefined {
  const parts = type.isUnion() ? type.types : [type];
  for (const t of parts) {
    const name = (t.getSymbol() ?? t.aliasSymbol)?.getName();
    if (name && FLAGGED.has(name)) return name;
  }
  return undefined;
}

/**
 * Whether a plan is handed on rather than used as a value: run by `yield*`, passed to a function (runSync, runPlan,
 * a driver), returned, kept in a variable or a property, or one branch of `c ? plan : other` handed on itself.
 */
function passedOn(node: ts.Expression): boolean {
  const p = node.parent;
  if (ts.isParenthesizedExpression(p) || ts.isAsExpression(p) || ts.isNonNullExpression(p)) return passedOn(p);
  if (ts.isConditionalExpression(p)) return p.condition !== node && passedOn(p);
  if (ts.isYieldExpression(p)) return p.asteriskToken !== undefined;
  if (ts.isCallExpression(p) || ts.isNewExpression(p)) return p.expression !== node;
  if (ts.isArrowFunction(p)) return !returnsVoid(p);
  return (
    ts.isReturnStatement(p) ||
    ts.isVariableDeclaration(p) ||
    ts.isPropertyAssignment(p) ||
    ts.isArrayLiteralExpression(p) ||
    (ts.isBinaryExpression(p) && p.operatorToken.kind === ts.SyntaxKind.EqualsToken && p.right === node)
  );
}

let checkerOf: ts.TypeChecker;
/** An arrow handed where a function returning void is expected (`ids.forEach((id) => plan(id))`): its plan is dropped. */
function returnsVoid(arrow: ts.ArrowFunction): boolean {
  const t = checkerOf.getContextualType(arrow);
  const sigs = t?.getCallSignatures() ?? [];
  return sigs.length > 0 && sigs.every((sg) => (sg.getReturnType().flags & ts.TypeFlags.Void) !== 0);
}

/** `p.then(ok, fail)` and `p.catch(fail)`: the rejection has a handler. */
function handled(e: ts.CallExpression): boolean {
  if (!ts.isPropertyAccessExpression(e.expression)) return false;
  const m = e.expression.name.text;
  return (m === 'then' && e.arguments.length >= 2) || m === 'catch';
}

function main(): void {
  const { program: p, configErrors } = program();
  const typecheck = process.argv.includes('--typecheck');
  const checker = p.getTypeChecker();
  checkerOf = checker;
  const found: string[] = [];
  for (const sf of p.getSourceFiles()) {
    if (sf.isDeclarationFile || !sf.fileName.startsWith(ROOT) || sf.fileName.includes('node_modules')) continue;
    const visit = (node: ts.Node): void => {
      // expect(plan) and expect(promise) assert on the wrapper, never on the answer (a test that cannot fail).
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'expect') {
        const arg = node.arguments[0];
        const name = arg && flaggedName(checker, checker.getTypeAtLocation(arg));
        if (name) {
          const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
          found.push(
            `${path.relative(ROOT, sf.fileName)}:${line + 1}: expect() given a ${name}: ${arg.getText(sf).slice(0, 80)}`,
          );
        }
      }
      // A plan used as a value (`if (hasX(db))`, `!plan`, `plan && …`): a generator object is always truthy.
      if (ts.isCallExpression(node) && !ts.isExpressionStatement(node.parent)) {
        const name = flaggedName(checker, checker.getTypeAtLocation(node));
        if (name === 'Generator' && !passedOn(node)) {
          const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
          found.push(
            `${path.relative(ROOT, sf.fileName)}:${line + 1}: a store plan used as a value: ${node.getText(sf).slice(0, 80)}`,
          );
        }
      }
      if (ts.isExpressionStatement(node)) {
        const e = node.expression;
        if ((ts.isCallExpression(e) && !handled(e)) || ts.isNewExpression(e)) {
          const name = flaggedName(checker, checker.getTypeAtLocation(e));
          if (name) {
            const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
            const what = name === 'Generator' ? 'a store plan never run' : 'a promise neither awaited nor voided';
            found.push(`${path.relative(ROOT, sf.fileName)}:${line + 1}: ${what}: ${e.getText(sf).slice(0, 80)}`);
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  for (const f of found) console.error(f);
  const typeFailed = typecheck && typeErrors(p, configErrors) > 0;
  if (found.length) {
    console.error(`${found.length} dropped plan(s) or promise(s): run them (runSync / yield* / await) or write void`);
    process.exit(1);
  }
  console.log('check-plans: no dropped store plan or promise');
  if (typecheck) console.log(typeFailed ? 'typecheck: failed' : 'typecheck: no error (tsc --noEmit -p .)');
  if (typeFailed) process.exit(1);
}

main();
