// The error-code registry (src/core/error-codes): every code the source can raise has an entry with the
// right type, and the served /docs/errors page has an anchor for each (so every doc_url resolves).
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { ERROR_CODES } from '../../src/core/error-codes.js';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** [code, type the call gives it, where] for every code literal handed to ApiError, invalid, notFound or badJson. */
function raisedCodes(): [string, string, string][] {
  const found: [string, string, string][] = [];
  for (const file of sources('src')) {
    const text = fs.readFileSync(file, 'utf8');
    const at = (i: number) => `${file}:${text.slice(0, i).split('\n').length}`;
    for (const m of text.matchAll(/new ApiError\(\s*'(\w+)',\s*'(\w+)'/g)) found.push([m[2], m[1], at(m.index!)]);
    for (const m of text.matchAll(/\bnotFound\('(\w+)'\)/g))
      found.push([`${m[1]}_not_found`, 'not_found', at(m.index!)]);
    // The code is the last argument of invalid(…)/badJson(…): a literal, or a choice between two.
    for (const m of text.matchAll(
      /\b(?:invalid|badJson)\((?:[^()]|\([^()]*\))*?,\s*(?:[\w.]+\s*\?\s*)?'([a-z]+(?:_[a-z]+)+)'(?:\s*:\s*'([a-z]+(?:_[a-z]+)+)')?\s*,?\s*\)/g,
    )) {
      for (const code of [m[1], m[2]]) if (code) found.push([code, 'validation_error', at(m.index!)]);
    }
  }
  return found;
}

describe('error-code registry', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService();
  });
  after(() => s.close());

  it('has an entry, of the same type, for every code the source raises', () => {
    const raised = raisedCodes();
    expect(raised.length, 'the scan finds the raise sites').to.be.above(30);
    for (const code of [
      'missing_scope',
      'tracking_link_not_found',
      'json_too_deep',
      'invalid_address',
      'domain_exists',
      'csrf_failed',
    ]) {
      expect(
        raised.map((r) => r[0]),
        code,
      ).to.include(code);
    }
    const registry = ERROR_CODES as Record<string, { type: string; status: number; doc: string }>;
    for (const [code, type, where] of raised) {
      expect(registry[code], `${code} (${where}) is not in src/core/error-codes.ts`).to.not.equal(undefined);
      expect(registry[code].type, `${code} at ${where}`).to.equal(type);
    }
  });

  it('every entry has a status of its family and a text', () => {
    for (const [code, { type, status, doc }] of Object.entries(ERROR_CODES)) {
      expect(code).to.match(/^[a-z]+(_[a-z]+)*$/);
      expect(doc.length, code).to.be.above(10);
      expect(status, code).to.be.within(type === 'api_error' ? 500 : 400, type === 'api_error' ? 599 : 499);
    }
  });

  it('the served /docs/errors page has an anchored entry for every code, with its status and type', async () => {
    const res = await fetch(`${s.url}/docs/errors`);
    expect(res.status).to.equal(200);
    const html = await res.text();
    const anchors = [...html.matchAll(/<section id="([a-z_]+)">/g)].map((m) => m[1]);
    expect(anchors).to.have.members(Object.keys(ERROR_CODES));
    for (const [code, { type, status }] of Object.entries(ERROR_CODES)) {
      expect(html, code).to.contain(
        `<section id="${code}"><h2><code>${code}</code></h2><p>HTTP ${status}, type <code>${type}</code>.</p>`,
      );
    }
  });

  it('an error answer carries its registry status and a doc_url whose anchor is on the page', async () => {
    const r = await s.api('GET', '/v1/emails', { headers: { authorization: 'Bearer nope' } });
    expect(r.status).to.equal(ERROR_CODES.invalid_api_key.status);
    expect(r.body.error).to.include({ type: ERROR_CODES.invalid_api_key.type, code: 'invalid_api_key' });
    const url = new URL(r.body.error.doc_url);
    const html = await fetch(`${s.url}${url.pathname}`).then((x) => x.text());
    expect(html).to.contain(`id="${url.hash.slice(1)}"`);
  });
});
