import { expect } from 'chai';
import { parseStsPolicy, stsMxMatches, stsRecordId } from '../../src/core/mta-sts.js';

describe('core/mta-sts: TXT record, policy file, mx patterns', () => {
  it('reads the id of exactly one v=STSv1 record', () => {
    expect(stsRecordId(['v=STSv1; id=20240101T0000'])).to.equal('20240101T0000');
    expect(stsRecordId(['v=spf1 -all', 'v=STSv1;id=abc;'])).to.equal('abc');
    expect(stsRecordId(['v=STSv1; id=a', 'v=STSv1; id=b'])).to.equal(null);
    expect(stsRecordId(['v=STSv1; id=not-alnum'])).to.equal(null);
    expect(stsRecordId(['v=STSv2; id=a'])).to.equal(null);
  });

  it('parses a policy and refuses a bad one', () => {
    expect(
      parseStsPolicy(
        'version: STSv1\r\nmode: enforce\r\nmx: MX1.Example.com.\r\nmx: *.example.net\r\nmax_age: 604800\r\n',
      ),
    ).to.deep.equal({
      mode: 'enforce',
      mx: ['mx1.example.com', '*.example.net'],
      max_age: 604800,
    });
    expect(parseStsPolicy('version: STSv1\nmode: none\nmax_age: 99999999999')).to.deep.include({ mode: 'none' });
    expect(parseStsPolicy('version: STSv1\nmode: enforce\nmx: a.example\nmax_age: 999999999')).to.deep.include({
      max_age: 31557600,
    });
    expect(parseStsPolicy('mode: enforce\nmx: a\nmax_age: 1')).to.have.property('error');
    expect(parseStsPolicy('version: STSv1\nmode: strict\nmx: a\nmax_age: 1')).to.have.property('error');
    expect(parseStsPolicy('version: STSv1\nmode: enforce\nmax_age: 1')).to.have.property('error');
    expect(parseStsPolicy('version: STSv1\nmode: enforce\nmx: a\nmax_age: soon')).to.have.property('error');
  });

  it('matches mx patterns: exact, or a wildcard for exactly one label', () => {
    expect(stsMxMatches('mx1.example.com', ['mx1.example.com'])).to.equal(true);
    expect(stsMxMatches('MX1.example.com.', ['mx1.example.com'])).to.equal(true);
    expect(stsMxMatches('mx1.example.com', ['*.example.com'])).to.equal(true);
    expect(stsMxMatches('a.b.example.com', ['*.example.com'])).to.equal(false);
    expect(stsMxMatches('example.com', ['*.example.com'])).to.equal(false);
    expect(stsMxMatches('mx.evil.com', ['mx1.example.com', '*.example.com'])).to.equal(false);
  });
});
