// One signed-token helper (core/signed-token) behind VERP, tracking and cursors: tokens issued before it
// (fixed bytes computed by the earlier code under a known key) still verify, and a changed byte is refused.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { TokenSigner } from '../../src/core/signed-token.js';
import { readVerp, verpAddress } from '../../src/core/verp.js';
import { makeToken, readToken } from '../../src/services/tracking.js';
import { decodeCursor, encodeCursor } from '../../src/services/emails.js';
import { runSync } from '../../src/store/op.js';

const KEY = Buffer.alloc(32, 7);
const EMAIL = 'em_01hzy3k8q4w5e6r7t8y9u0i1o2';
const URL_ = 'https://example.com/a?b=1&c=é';
// Issued by the code before the shared helper, under KEY.
const OLD = {
  verp: 'bounces+01m80bp37wpt5ebvmtk2wpc265-9ix-b5c862c422810903@bounces.mta.test',
  open: 'ZW1fMDFoenkzazhxNHc1ZTZyN3Q4eTl1MGkxbzI.d2AoOQo6MitLmQ16PT_ThA',
  click: 'ZW1fMDFoenkzazhxNHc1ZTZyN3Q4eTl1MGkxbzIKaHR0cHM6Ly9leGFtcGxlLmNvbS9hP2I9MSZjPcOp.R-dhPBCbOZCrssMkd5iO3Q',
  cursor: 'ZW0uNDIuTXZtd1pWbVhCNDQwZXVfdA',
};
/** Flips one character of the MAC at the end of a token. */
const tamper = (t: string, from = t.length - 2) => t.slice(0, from) + (t[from] === 'A' ? 'B' : 'A') + t.slice(from + 1);

describe('signed tokens: one helper, same bytes as before', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [webhooks] });
    // A known key for each purpose, set before anything signs with it.
    for (const name of ['tracking', 'cursor', 'verp']) {
      s.db
        .prepare('INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)')
        .run(`secret:${name}`, KEY.toString('base64'));
    }
  });
  after(() => s.close());

  it('VERP: the same token as before, verified; a changed MAC or another key is refused', () => {
    expect(verpAddress(KEY, 'em_01m80bp37wpt5ebvmtk2wpc265', 12345, 'bounces.mta.test')).to.equal(OLD.verp);
    expect(readVerp(KEY, OLD.verp)).to.deep.equal({ emailId: 'em_01m80bp37wpt5ebvmtk2wpc265', deliveryId: 12345 });
    expect(readVerp(KEY, OLD.verp.replace('903@', '904@'))).to.equal(null);
    expect(readVerp(Buffer.alloc(32, 8), OLD.verp)).to.equal(null);
  });

  it('tracking: open and click tokens keep their bytes; kinds do not cross; a changed MAC is refused', () => {
    expect(makeToken(s.ctx, 'o', EMAIL)).to.equal(OLD.open);
    expect(makeToken(s.ctx, 'c', EMAIL, URL_)).to.equal(OLD.click);
    expect(readToken(s.ctx, 'o', OLD.open)).to.deep.equal({ emailId: EMAIL, url: '' });
    expect(readToken(s.ctx, 'c', OLD.click)).to.deep.equal({ emailId: EMAIL, url: URL_ });
    expect(readToken(s.ctx, 'c', OLD.open)).to.equal(null);
    expect(readToken(s.ctx, 'o', tamper(OLD.open))).to.equal(null);
    expect(readToken(s.ctx, 'c', tamper(OLD.click))).to.equal(null);
  });

  it('tracking: an old click token still redirects over HTTP; a tampered one is 404', async () => {
    const ok = await fetch(`${s.url}/t/c/${OLD.click}`, { method: 'HEAD', redirect: 'manual' });
    expect(ok.status).to.equal(302);
    expect(ok.headers.get('location')).to.equal(encodeURI(URL_));
    expect((await fetch(`${s.url}/t/c/${tamper(OLD.click)}`, { method: 'HEAD', redirect: 'manual' })).status).to.equal(
      404,
    );
  });

  it('cursors: an old cursor decodes to its position; another list or a changed MAC is invalid_parameter', async () => {
    expect(runSync(encodeCursor(s.db, 'em', 42))).to.equal(OLD.cursor);
    expect(runSync(decodeCursor(s.db, 'em', OLD.cursor))).to.equal(42);
    expect(() => runSync(decodeCursor(s.db, 'sup', OLD.cursor))).to.throw(/cursor/);
    const bad = Buffer.from(tamper(Buffer.from(OLD.cursor, 'base64url').toString())).toString('base64url');
    expect(() => runSync(decodeCursor(s.db, 'em', bad))).to.throw(/cursor/);
    const key = s.key(s.team().id, 'test');
    expect((await s.api('GET', `/v1/emails?cursor=${OLD.cursor}`, { key })).status).to.equal(200);
    const r = await s.api('GET', `/v1/emails?cursor=${bad}`, { key });
    expect(r.status).to.equal(422);
    expect(r.body.error).to.include({ code: 'invalid_parameter', param: 'cursor' });
  });

  it('the helper: MAC lengths per purpose, constant-time verify refuses other lengths, short keys refused', () => {
    expect(new TokenSigner('verp', KEY).mac('x')).to.match(/^[0-9a-f]{16}$/);
    expect(new TokenSigner('tracking', KEY).mac('x')).to.match(/^[\w-]{22}$/);
    expect(new TokenSigner('cursor', KEY).mac('x')).to.match(/^[\w-]{16}$/);
    const t = new TokenSigner('cursor', KEY);
    expect(t.verify('x', t.mac('x'))).to.equal(true);
    expect(t.verify('x', t.mac('x') + 'A')).to.equal(false);
    expect(t.verify('y', t.mac('x'))).to.equal(false);
    expect(() => new TokenSigner('verp', Buffer.alloc(8))).to.throw(/shorter than 16 bytes/);
  });
});
