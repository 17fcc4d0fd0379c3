// Credit allocation, retry schedule, ids, VERP tokens and address parsing: pure functions.
import { expect } from 'chai';
import { allocate, available, grantExpiry, monthOf } from '../../src/core/credits.js';
import { retryDelayMs, expired } from '../../src/core/retry.js';
import { parseMailbox, normaliseAddress } from '../../src/core/address.js';
import { newId } from '../../src/core/ids.js';
import { verpAddress, readVerp } from '../../src/core/verp.js';

const now = Date.UTC(2026, 10, 22);
const g = (id: string, remaining: number, createdAt: number, expiresAt = now + 1e9) => ({
  id,
  remaining,
  createdAt,
  expiresAt,
});

describe('core/credits', () => {
  it('spends the free allowance first, then grants oldest first, skipping expired ones', () => {
    expect(allocate(5, 2, [g('b', 10, 2), g('a', 1, 1), g('x', 100, 0, now - 1)], now)).to.deep.equal([
      { grantId: null, amount: 2 },
      { grantId: 'a', amount: 1 },
      { grantId: 'b', amount: 2 },
    ]);
    expect(allocate(12, 1, [g('a', 10, 1)], now)).to.equal(null);
    expect(available(3, [g('a', 10, 1), g('x', 100, 0, now - 1)], now)).to.equal(13);
  });
  it('grants expire 12 months later; months are calendar months (UTC)', () => {
    expect(new Date(grantExpiry(now)).toISOString()).to.equal('2027-11-22T00:00:00.000Z');
    expect(monthOf(now)).to.equal('2026-11');
  });
});

describe('core/retry', () => {
  const p = { minSeconds: 60, maxSeconds: 3600, lifetimeSeconds: 172800 };
  it('backs off exponentially within ±20 % jitter, capped at the maximum', () => {
    expect(retryDelayMs(p, 1, 0.5)).to.equal(60_000);
    expect(retryDelayMs(p, 2, 0.5)).to.equal(120_000);
    expect(retryDelayMs(p, 1, 0)).to.equal(48_000);
    expect(retryDelayMs(p, 1, 1)).to.equal(72_000);
    expect(retryDelayMs(p, 20, 1)).to.equal(3_600_000);
  });
  it('expires after the queue lifetime', () => {
    expect(expired(p, 0, 172800_000)).to.equal(false);
    expect(expired(p, 0, 172800_001)).to.equal(true);
  });
});

describe('core/address', () => {
  it('parses bare and named mailboxes, converts IDN to punycode', () => {
    expect(parseMailbox('Acme <Hello@Acme.Test>')).to.deep.include({
      name: 'Acme',
      address: 'Hello@acme.test',
      domain: 'acme.test',
    });
    expect(parseMailbox('"Doe, J" <j@x.test>')).to.deep.include({ name: 'Doe, J', address: 'j@x.test' });
    expect(normaliseAddress('u@bücher.example')?.domain).to.equal('xn--bcher-kva.example');
  });
  it('refuses malformed addresses and header injection', () => {
    for (const a of [
      'x',
      '@x.test',
      'x@',
      'x@localhost',
      'a b@x.test',
      'x@x.test\r\nBcc: y@z.test',
      'x@-x.test',
      'x@1.2.3.4',
      `${'a'.repeat(65)}@x.test`,
      'x..y@x.test',
    ]) {
      expect(parseMailbox(a), a).to.equal(null);
    }
  });
});

describe('core/ids and verp', () => {
  it('ids sort by time and have the documented shape', () => {
    const a = newId('em', now);
    const b = newId('em', now + 1);
    expect(a).to.match(/^em_[0-9a-z]{26}$/);
    expect(a < b).to.equal(true);
  });
  it('VERP tokens round-trip and refuse forgeries', () => {
    const secret = Buffer.alloc(32, 7);
    const addr = verpAddress(secret, 'em_01m80bp37wpt5ebvmtk2wpc265', 12345, 'bounces.mta.test');
    expect(addr).to.match(/^bounces\+[0-9a-z-]+@bounces\.mta\.test$/);
    expect(readVerp(secret, addr)).to.deep.equal({ emailId: 'em_01m80bp37wpt5ebvmtk2wpc265', deliveryId: 12345 });
    expect(readVerp(secret, addr.toUpperCase())).to.deep.equal({
      emailId: 'em_01m80bp37wpt5ebvmtk2wpc265',
      deliveryId: 12345,
    });
    expect(readVerp(Buffer.alloc(32, 8), addr)).to.equal(null);
    expect(readVerp(secret, addr.replace('9ix', '9iy').replace(/-(\w+)-/, '-zz-'))).to.equal(null);
    expect(readVerp(secret, 'postmaster@bounces.mta.test')).to.equal(null);
  });
  it('VERP MACs are 64 bits (16 hex chars); a token cut to the old 10-char MAC is refused', () => {
    const secret = Buffer.alloc(32, 7);
    const addr = verpAddress(secret, 'em_01m80bp37wpt5ebvmtk2wpc265', 12345, 'bounces.mta.test');
    const mac = /-([0-9a-f]+)@/.exec(addr)![1];
    expect(mac).to.have.length(16);
    expect(addr.split('@')[0].length).to.be.at.most(64); // RFC 5321 local-part limit
    expect(readVerp(secret, addr.replace(`-${mac}@`, `-${mac.slice(0, 10)}@`))).to.equal(null);
    expect(readVerp(secret, addr.replace(`-${mac}@`, `-${mac}0@`))).to.equal(null);
  });
});
