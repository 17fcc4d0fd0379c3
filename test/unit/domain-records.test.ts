// Pure domain rules: name normalisation, records to publish, DKIM/DMARC/SPF/return-path judgement,
// the domain status table (pending never becomes failed; DNS errors change nothing) and return-path use.
import { expect } from 'chai';
import {
  normaliseDomain,
  expectedRecords,
  dkimRecord,
  checkKey,
  judgeDkim,
  judgeDmarc,
  judgeReportAuth,
  reportAuthRecord,
  judgeReturnPath,
  judgeSpf,
  nextDomainStatus,
  returnPathVerified,
  spfMechanisms,
  selectorFor,
  type CheckKey,
  type CheckOutcome,
  type DomainStatus,
} from '../../src/core/domain-records.js';

const pass: CheckOutcome = { result: 'pass', found: 'x' };
const fail: CheckOutcome = { result: 'fail', found: null, error: 'no' };
const err: CheckOutcome = { result: 'error', error: 'timed out' };
const all = (o: CheckOutcome, over: Partial<Record<CheckKey, CheckOutcome>> = {}) => ({
  dkim: o,
  spf: o,
  dmarc: o,
  return_path: o,
  return_path_spf: o,
  ...over,
});

describe('domain records (pure)', () => {
  it('normalises names to lower-case punycode and refuses what is not a domain', () => {
    expect(normaliseDomain(' Mail.Example.COM. ')).to.equal('mail.example.com');
    expect(normaliseDomain('bücher.example')).to.equal('xn--bcher-kva.example');
    for (const bad of [
      '',
      'com',
      'a..b',
      '-a.com',
      'a-.com',
      'a_b.com',
      '1.2.3.4',
      '::1',
      'a b.com',
      'x@y.com',
      'http://x.com',
      'a.123',
      `${'a'.repeat(64)}.com`,
      `${'a.'.repeat(127)}com`,
    ]) {
      expect(normaliseDomain(bad), bad).to.equal(null);
    }
  });

  it('builds the five records (the return path: MX, then SPF TXT); SPF from the sending IPs or a:<hostname>', () => {
    const r = expectedRecords({
      name: 'ex.com',
      selector: 'mta20250101abcd',
      publicKey: 'AAAA',
      algorithm: 'rsa',
      returnPath: 'bounces.ex.com',
      sendingIps: ['192.0.2.1', '2001:db8::/64', 'include:_spf.x.net'],
      hostname: 'mx.us',
      bounceDomain: 'Bounce.US',
    });
    expect(r).to.deep.equal([
      { purpose: 'dkim', type: 'TXT', name: 'mta20250101abcd._domainkey.ex.com', value: 'v=DKIM1; k=rsa; p=AAAA' },
      {
        purpose: 'spf',
        type: 'TXT',
        name: 'ex.com',
        value: 'v=spf1 ip4:192.0.2.1 ip6:2001:db8::/64 include:_spf.x.net ~all',
      },
      {
        purpose: 'dmarc',
        type: 'TXT',
        name: '_dmarc.ex.com',
        value: 'v=DMARC1; p=none; adkim=r; aspf=r; rua=mailto:dmarc@bounce.us',
      },
      { purpose: 'return_path', type: 'MX', name: 'bounces.ex.com', value: '10 mx.us' },
      {
        purpose: 'return_path',
        type: 'TXT',
        name: 'bounces.ex.com',
        value: 'v=spf1 ip4:192.0.2.1 ip6:2001:db8::/64 include:_spf.x.net ~all',
      },
    ]);
    expect(r.map(checkKey)).to.deep.equal(['dkim', 'spf', 'dmarc', 'return_path', 'return_path_spf']);
    const bare = expectedRecords({
      name: 'ex.com',
      selector: 's',
      publicKey: 'A',
      algorithm: 'rsa',
      returnPath: 'bounces.ex.com',
      sendingIps: [],
      hostname: 'mx.us',
      bounceDomain: 'Bounce.US',
    });
    expect(
      bare.filter((x) => x.type === 'TXT' && x.value.startsWith('v=spf1')).map((x) => [x.name, x.value]),
    ).to.deep.equal([
      ['ex.com', 'v=spf1 a:mx.us ~all'],
      ['bounces.ex.com', 'v=spf1 a:mx.us ~all'],
    ]);
    expect(spfMechanisms([], 'mx.us')).to.deep.equal(['a:mx.us']);
    expect(dkimRecord('ex.com', 'mta20250101beef', 'ed25519', 'BBBB')).to.deep.equal({
      purpose: 'dkim',
      type: 'TXT',
      name: 'mta20250101beef._domainkey.ex.com',
      value: 'v=DKIM1; k=ed25519; p=BBBB',
    });
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

  it('names the DMARC report authorisation under the bounce domain and judges it (RFC 7489 §7.1)', () => {
    expect(reportAuthRecord('ex.com', 'Bounce.US')).to.deep.equal({
      purpose: 'dmarc_report_auth',
      type: 'TXT',
      name: 'ex.com._report._dmarc.bounce.us',
      value: 'v=DMARC1',
    });
    expect(judgeReportAuth(['v=DMARC1']).result).to.equal('pass');
    expect(judgeReportAuth(['other', 'v=DMARC1;']).result).to.equal('pass');
    expect(judgeReportAuth(['v=spf1 -all'])).to.include({ result: 'fail', found: 'v=spf1 -all' });
    expect(judgeReportAuth([])).to.include({ result: 'fail', found: null });
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
    expect(judgeReturnPath([{ exchange: 'mx.other', priority: 10 }], 'mta.test')).to.deep.include({
      result: 'fail',
      found: '10 mx.other',
    });
  });

  it("judges one IP's SPF result: only pass passes, temperror is inconclusive", () => {
    expect(judgeSpf('pass', '192.0.2.1', 'v=spf1 ip4:192.0.2.1 ~all')).to.deep.equal({
      result: 'pass',
      found: 'v=spf1 ip4:192.0.2.1 ~all',
    });
    expect(judgeSpf('none', '192.0.2.1', null)).to.deep.equal({
      result: 'fail',
      found: null,
      error: 'No SPF record (v=spf1) at this name.',
    });
    for (const res of ['softfail', 'fail', 'neutral', 'permerror']) {
      const o = judgeSpf(res, '192.0.2.1', 'v=spf1 -all');
      expect(o, res).to.deep.include({ result: 'fail', found: 'v=spf1 -all' });
      expect((o as any).error, res).to.contain(`${res} for 192.0.2.1`);
    }
    expect(judgeSpf('temperror', '192.0.2.1', null, 'timeout')).to.deep.include({ result: 'error' });
  });

  it('uses the return path only when both its MX and its SPF record are verified', () => {
    const st = (mx: DomainStatus, txt?: DomainStatus) => ({
      return_path: { status: mx },
      ...(txt ? { return_path_spf: { status: txt } } : {}),
    });
    expect(returnPathVerified(st('verified', 'verified'))).to.equal(true);
    expect(returnPathVerified(st('verified', 'failed'))).to.equal(false);
    expect(returnPathVerified(st('verified', 'pending'))).to.equal(false);
    expect(returnPathVerified(st('failed', 'verified'))).to.equal(false);
    expect(returnPathVerified(st('verified'))).to.equal(false); // checked before the SPF record existed
    expect(returnPathVerified({})).to.equal(false);
  });

  it('moves the domain status by the required records only; errors keep it', () => {
    const cases: [DomainStatus, ReturnType<typeof all>, DomainStatus][] = [
      ['pending', all(pass), 'verified'],
      ['pending', all(pass, { return_path: fail }), 'verified'],
      ['pending', all(pass, { return_path_spf: fail }), 'verified'],
      ['verified', all(pass, { return_path_spf: fail }), 'verified'],
      ['pending', all(pass, { dkim: fail }), 'pending'],
      ['pending', all(pass, { spf: err }), 'pending'],
      ['verified', all(pass, { dmarc: fail }), 'failed'],
      ['verified', all(pass, { dkim: err }), 'verified'],
      ['verified', all(pass, { dkim: err, spf: fail }), 'failed'],
      ['failed', all(pass), 'verified'],
      ['failed', all(pass, { spf: fail }), 'failed'],
      ['failed', all(err), 'failed'],
    ];
    for (const [from, outcomes, to] of cases)
      expect(nextDomainStatus(from, outcomes), `${from} ${JSON.stringify(outcomes)}`).to.equal(to);
  });
});
