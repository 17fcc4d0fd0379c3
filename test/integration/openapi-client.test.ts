// A TypeScript client generated from the served document (openapi-typescript, pinned in devDependencies) with
// openapi-fetch: test/client/program.ts, which sends, batches, lists with pagination, creates a domain and a
// webhook, reads stats and two errors without a cast, type-checks against the freshly generated types and runs
// against the service (each answer also checked against the document, checkedFetch). A misuse does not type-check.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import ts from 'typescript';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { checkedFetch } from '../helpers/contract.js';
import { SCOPES } from '../../src/services/keys.js';
import { CLIENT_TYPES, writeAtomically, writeClientTypes } from '../../scripts/openapi-client.js';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const PROGRAM = path.join(ROOT, 'test/client/program.ts');
const MISUSE = path.join(path.dirname(CLIENT_TYPES), 'misuse.ts');

/** tsc's diagnostics for `files` with the project's compiler options, as `file:line message`. */
function typecheck(files: string[]): string[] {
  const config = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile).config;
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT);
  const program = ts.createProgram(files, { ...options, noEmit: true });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${path.relative(ROOT, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}`
      : '';
    return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

describe('a TypeScript client generated from /v1/openapi.json', () => {
  let s: TestService;
  const keys = { test: '', live: '' };
  before(async () => {
    s = await startTestService({ env: { MTA_RATE_LIMIT: '0' } });
    const teamId = s.team().id;
    keys.test = s.key(teamId, 'test', [...SCOPES]);
    keys.live = s.key(teamId, 'live', [...SCOPES]);
    insertVerifiedDomain(s.db, teamId, 'acme.test');
  });
  after(() => s.close());

  it('type-checks a program using it without casts, and the program runs against the service', async function () {
    this.timeout(120_000);
    const doc = await s.api('GET', '/v1/openapi.json');
    await writeClientTypes(doc.body);
    writeAtomically(
      MISUSE,
      [
        "import createClient from 'openapi-fetch';",
        "import type { paths } from './v1.js';",
        'const api = createClient<paths>({});',
        "await api.POST('/emails', { body: { from: 'a@b.test', to: 5, subject: 's' } });",
        "await api.GET('/no-such-route');",
        "await api.GET('/emails', { params: { query: { limit: 'ten' } } });",
        '',
      ].join('\n'),
    );
    const errors = typecheck([PROGRAM, MISUSE]);
    expect(errors.filter((e) => !e.startsWith('test/client/generated/misuse.ts'))).to.deep.equal([]);
    // The generated types are precise: a wrong field type, an unknown path and a string limit are refused.
    expect(errors.map((e) => e.split(' ')[0])).to.deep.equal(
      [4, 5, 6].map((l) => `test/client/generated/misuse.ts:${l}`),
    );

    const { program } = (await import(pathToFileURL(PROGRAM).href)) as {
      program: (url: string, k: typeof keys, fetch: (r: Request) => Promise<Response>) => Promise<any>;
    };
    const out = await program(`${s.url}/v1`, keys, checkedFetch(s.ctx));
    expect(out.sent.status).to.equal('queued');
    expect(out.batch).to.deep.equal(['Hi bob', 'Hi cy', 'Hi dee']);
    expect(out.pages.map((p: string[]) => p.length)).to.deep.equal([2, 2]);
    expect(new Set(out.pages.flat()).size).to.equal(4);
    expect(out.pages.flat()).to.include(out.sent.id);
    expect(out.domain.name).to.equal('news.example.test');
    expect(out.domain.records).to.include('TXT');
    expect(out.domain.listed).to.include.members(['acme.test', 'news.example.test']);
    expect(out.webhook).to.deep.equal({ events: ['delivered'], enabled: false });
    expect(out.stats).to.deep.equal({ object: 'stats', granularity: 'day' });
    expect(out.missing).to.deep.equal({ status: 404, code: 'email_not_found' });
    expect(out.refused.status).to.equal(422);
    expect(out.refused.type).to.equal('validation_error');
    expect(out.refused.param).to.equal('from');
  });
});
