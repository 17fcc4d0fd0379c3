// findAddress, the inbound reader's one address extractor: what it finds in DSN fields, headers and prose, and
// that it stays linear on pathological input (each case well under the time a super-linear scan would take).
import { expect } from 'chai';
import { findAddress } from '../../src/core/address.js';

describe('findAddress', () => {
  it('reads DSN fields, headers and lines of prose', () => {
    expect(findAddress('rfc822; User@Example.NET')).to.equal('user@example.net');
    expect(findAddress('RFC822;<u@example.net>')).to.equal('u@example.net');
    expect(findAddress('Bob Smith <bob+tag@mail.example.com>')).to.equal('bob+tag@mail.example.com');
    expect(findAddress('<bounces+abc@bounce.example.com>')).to.equal('bounces+abc@bounce.example.com');
    expect(findAddress('550 5.1.1 <x@example.org>: Recipient address rejected')).to.equal('x@example.org');
    expect(findAddress('mailto:a.b@c-d.example.com.')).to.equal('a.b@c-d.example.com');
  });

  it('prefers the address in angle brackets to one in a display name', () => {
    expect(findAddress('"admin@bank.example" <real@sender.example>')).to.equal('real@sender.example');
    expect(findAddress('a@one.example, <b@two.example>')).to.equal('b@two.example');
    expect(findAddress('a@one.example, b@two.example')).to.equal('a@one.example');
  });

  it('finds nothing where there is no dotted domain or no local part', () => {
    for (const v of [
      null,
      undefined,
      '',
      '<>',
      'postmaster',
      'user@localhost',
      '@example.com',
      'a@.example.com',
      'a@b..c',
    ]) {
      expect(findAddress(v), String(v)).to.equal(null);
    }
    expect(findAddress('@x a@b')).to.equal(null);
    expect(findAddress('@x a@b.c')).to.equal('a@b.c');
  });

  it('is linear on pathological input', () => {
    const n = 200_000;
    const inputs = [
      'a'.repeat(n),
      '@'.repeat(n),
      'a@'.repeat(n / 2),
      `${'a'.repeat(n)}@`,
      `@${'a'.repeat(n)}`,
      'a.'.repeat(n / 2),
      `x@${'a.'.repeat(n / 2)}`,
      'a@b.'.repeat(n / 4),
      `${'<a@b.c'.repeat(n / 6)}`,
      `${'a'.repeat(n)}@b`.repeat(2),
      `${'!'.repeat(n)}@${'-'.repeat(n)}`,
    ];
    for (const v of inputs) {
      const t = process.hrtime.bigint();
      findAddress(v);
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      expect(ms, `${v.slice(0, 12)}… (${v.length} chars)`).to.be.below(100);
    }
  });
});
