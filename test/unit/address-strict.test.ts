// core/address readMailbox: one mailbox per string, display-name specials only inside quotes; forms that
// could show one address and send to another are marked hostile (→ 422 invalid_address).
import { expect } from 'chai';
import { readMailbox } from '../../src/core/address.js';

describe('address: strict single-mailbox parse', () => {
  it('reads bare addresses, plain and quoted display names', () => {
    const cases: [string, string | null, string][] = [
      ['x@alpha.test', null, 'x@alpha.test'],
      ['  Boss <x@Alpha.Test> ', 'Boss', 'x@alpha.test'],
      ['<x@alpha.test>', null, 'x@alpha.test'],
      ['"Smith, John" <j@alpha.test>', 'Smith, John', 'j@alpha.test'],
      ['"Boss <ceo@paypal.com>" <x@alpha.test>', 'Boss <ceo@paypal.com>', 'x@alpha.test'],
      ['"a \\"q\\" b" <x@alpha.test>', 'a "q" b', 'x@alpha.test'],
      ['John Q. Public (Sales) <x@alpha.test>', 'John Q. Public (Sales)', 'x@alpha.test'],
      ['Zoë  Müller <x@alpha.test>', 'Zoë Müller', 'x@alpha.test'],
      ['"x>y"@alpha.test', null, '"x>y"@alpha.test'],
      ['Q <"a>b"@alpha.test>', 'Q', '"a>b"@alpha.test'],
    ];
    for (const [input, name, address] of cases) {
      const r = readMailbox(input);
      expect(r.ok, input).to.equal(true);
      if (r.ok) expect(r.mailbox, input).to.deep.include({ name, address });
    }
  });

  it('marks disguises as hostile and plain mistakes as not', () => {
    const hostile = [
      'Boss <ceo@paypal.com> <x@alpha.test>',
      'a <ceo@paypal.com>, x@alpha.test',
      'Nm r4@rcpt.test <v3@victim.test>',
      'grp: x@alpha.test;',
      'a@alpha.test, b@victim.test',
      'Boss <x@alpha.test> tail',
      'Boss <x@alpha.test>, y@victim.test',
      'A;B <x@alpha.test>',
      'x [y] <x@alpha.test>',
      'a\\b <x@alpha.test>',
      'a <b <x@alpha.test>>',
      'a <x@alpha.test>>',
    ];
    for (const input of hostile) expect(readMailbox(input), input).to.deep.include({ ok: false, hostile: true });
    const plain = [
      'x',
      'x@localhost',
      '"unterminated <x@alpha.test>',
      'Boss <x@alpha.test',
      'Boss <not-an-address>',
      'a\r\nBcc: y@z.test <x@alpha.test>',
      `${'a'.repeat(64)}@${'b'.repeat(250)}.test`,
      'x@@alpha.test',
    ];
    for (const input of plain) expect(readMailbox(input), input).to.deep.include({ ok: false, hostile: false });
  });
});
