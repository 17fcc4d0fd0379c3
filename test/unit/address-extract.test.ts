// findAddress, the inbound reader's one address extractor: what it finds in DSN fields, headers and prose, and
// that it stays linear on pathological input (each case well under the time a super-linear scan would take).
import { expect } from 'chai';
import { findAddress } from '../../src/core/address.js';
import { growth } from '../helpers/growth.js';

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

  it('is linear on pathological input', function () {
    this.timeout(30_000);
    // Each shape at n and n / 8 characters: the median time grows ~8× (linear), not ~64× (quadratic). A bound in ms
    // (once 100 ms at n = 200,000) failed at 113 ms on a loaded box.
    const n = 200_000;
    const shapes: [string, (k: number) => string][] = [
      ['a…', (k) => 'a'.repeat(k)],
      ['@…', (k) => '@'.repeat(k)],
      ['a@a@…', (k) => 'a@'.repeat(k / 2)],
      ['a…@', (k) => `${'a'.repeat(k)}@`],
      ['@a…', (k) => `@${'a'.repeat(k)}`],
      ['a.a.…', (k) => 'a.'.repeat(k / 2)],
      ['x@a.a.…', (k) => `x@${'a.'.repeat(k / 2)}`],
      ['a@b.a@b.…', (k) => 'a@b.'.repeat(k / 4)],
      ['<a@b.c<a@b.c…', (k) => '<a@b.c'.repeat(k / 6)],
      ['a…@ba…@b', (k) => `${'a'.repeat(k)}@b`.repeat(2)],
      ['!…@-…', (k) => `${'!'.repeat(k)}@${'-'.repeat(k)}`],
    ];
    for (const [name, build] of shapes) {
      const g = growth(build, findAddress, n);
      expect(g.linear, `${name}: ${g.smallMs.toFixed(2)} ms at ${n / 8}, ${g.bigMs.toFixed(2)} ms at ${n}`).to.equal(
        true,
      );
    }
  });
});
