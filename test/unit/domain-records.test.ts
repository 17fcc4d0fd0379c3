// Pure domain rules: name normalisation, records to publish, DKIM/DMARC/return-path judgement and
// the domain status table (pending never becomes failed; DNS errors change nothing).
import { expect } from 'chai';
import { normaliseDomain, expectedRecords, dkimRecord, judgeDkim, judgeDmarc, judgeReturnPath, nextDomainStatus, spfMechanisms, selectorFor, type CheckOutcome, type DomainStatus, type Purpose } from '../../src/core/domain-records.js';

const pass: CheckOutcome = { result: 'pass', found: 'x' };
const fail: CheckOutcome = { result: 'fail', found: null, error: 'no' };
const err: CheckOutcome = { result: 'error', error: 'timed out' };
const all = (o: CheckOutcome, over: Partial<Record<Purpose, CheckOutcome>> = {}) => ({ dkim: o, spf: o, dmarc: o, return_path: o, ...over });

describe('domain records (pure)', () => {
  it('normalises names to lower-case punycode and refuses what is not a domain', () => {
    expect(normaliseDomain(' Mail.Example.COM. ')).to.equal('mail.example.com');
    expect(normaliseDomain('bücher.example')).to.equal('xn--bcher-kva.example');
    for (const bad of ['', 'com', 'a..b', '-a.com', 'a-.com', 'a_b.com', '1.2.3.4', '::1', 'a b.com', 'x@y.com', 'http://x.com', 'a.123', `${'a'.repeat(64)}.com`, `${'a.'.repeat(127)}com`]) {
      expect(normaliseDomain(bad), bad).to.equal(null);
    }
  });

  it('builds the four records; SPF from the sending IPs or a:<hostname>', () => {
    const r = expectedRecords({ name: 'ex.com', selector: 'mta20250101abcd', publicKey: 'AAAA', algorithm: 'rsa', returnPath: 'bounces.ex.com', sendingIps: ['192.0.2.1', '2001:db8::/64', 'include:_spf.x.net'], hostname: 'mx.us' });
    expect(r).to.deep.equal([
      { purpose: 'dkim', type: 'TXT', name: 'mta20250101abcd._domainkey.ex.com', value: 'v=DKIM1; k=rsa; p=AAAA' },
      { purpose: 'spf', type: 'TXT', name: 'ex.com', value: 'v=spf1 ip4:192.0.2.1 ip6:2001:db8::/64 include:_spf.x.net ~all' },
      { purpose: 'dmarc', type: 'TXT', name: '_dmarc.ex.com', value: 'v=DMARC1; p=none; adkim=r; aspf=r' },
      { purpose: 'return_path', type: 'MX', name: 'bounces.ex.com', value: '10 mx.us' },
    ]);
    expect(spfMechanisms([], 'mx.us')).to.deep.equal(['a:mx.us']);
    expect(dkimRecord('ex.com', 'mta20250101beef', 'ed25519', 'BBBB')).to.deep.equal({ purpose: 'dkim', type: 'TXT', name: 'mta20250101beef._domainkey.ex.com', value: 'v=DKIM1; k=ed25519; p=BBBB' });
    expect(selectorFor(Date.UTC(2025, 0, 31), 'x7k2')).to.equal('mta20250131x7k2');
  });

  it('judges DKIM: whitespace in p= ignored, mismatch and revocation named', () => {
    expect(judgeDkim(['v=DKIM1; k=rsa; p=AB CD\tEF'], 'ABCDEF').result).to.equal('pass');
    expect(judgeDkim(['p=ABCDEF'], 'ABCDEF').result).to.equal('pass');
    expect(judgeDkim(['v=DKIM1; p=OTHER', 'v=DKIM1; p=ABCDEF'], 'ABCDEF').result).to.equal('pass');
    expect(judgeDkim(['v=DKIM1; p=OTHER'], 'ABCDEF')).to.deep.include({ result: 'fail', found: 'v=DKIM1; p=OTHER' });
    expect((judgeDkim(['v=DKIM1; p='], 'ABCDEF') as any).error).to.match(/revoked/);
    expect(judgeDkim([], 'ABCDEF')).to.deep.include({ result: 'fail', found: null });
  });

  it('judges DMARC: exactly one v=DMARC1 record with a valid policy', () => {
    expect(judgeDmarc(['v=DMARC1; p=none']).result).to.equal('pass');
    expect(judgeDmarc(['something else', 'v=DMARC1;p=reject;rua=mailto:a@b.c']).result).to.equal('pass');
    expect(judgeDmarc(['v=DMARC1; p=none', 'v=DMARC1; p=reject']).result).to.equal('fail');
    expect(judgeDmarc(['v=DMARC1; p=maybe']).result).to.equal('fail');
    expect(judgeDmarc(['v=DMARC1; garbage']).result).to.equal('fail');
    expect(judgeDmarc([]).result).to.equal('fail');
  });

  it('judges the return-path MX against our host name', () => {
    expect(judgeReturnPath([{ exchange: 'MTA.test.', priority: 10 }], 'mta.test').result).to.equal('pass');
    expect(judgeReturnPath([{ exchange: 'mx.other', priority: 10 }], 'mta.test')).to.deep.include({ result: 'fail', found: '10 mx.other' });
  });

  it('moves the domain status by the required records only; errors keep it', () => {
    const cases: [DomainStatus, ReturnType<typeof all>, DomainStatus][] = [
      ['pending', all(pass), 'verified'],
      ['pending', all(pass, { return_path: fail }), 'verified'],
      ['pending', all(pass, { dkim: fail }), 'pending'],
      ['pending', all(pass, { spf: err }), 'pending'],
      ['verified', all(pass, { dmarc: fail }), 'failed'],
      ['verified', all(pass, { dkim: err }), 'verified'],
      ['verified', all(pass, { dkim: err, spf: fail }), 'failed'],
      ['failed', all(pass), 'verified'],
      ['failed', all(pass, { spf: fail }), 'failed'],
      ['failed', all(err), 'failed'],
    ];
    for (const [from, outcomes, to] of cases) expect(nextDomainStatus(from, outcomes), `${from} ${JSON.stringify(outcomes)}`).to.equal(to);
  });
});
