// The inbound reader on pathological input (audit finding 1): every case parses in linear time,
// well under the listener's 2 s budget, and a few everyday reports read the same as before.
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { parseReplyLine } from '../../src/core/classify.js';
import { pathologicalInputs, dsn } from '../integration/redos-inputs.js';
import { cpuMsOf } from '../helpers/growth.js';

describe('inbound reader: pathological input', function () {
  this.timeout(30_000);
  for (const [name, raw] of Object.entries(pathologicalInputs('fbl@bounces.mta.test'))) {
    // CPU time, not wall time: the parallel test phase stretched a 500 ms wall-clock bound (docs/testing.md).
    it(`${name} (${Math.round(raw.length / 1024)} KB) parses in under 500 ms of CPU time`, async () => {
      const { ms, value: report } = await cpuMsOf(() => parseReport(raw));
      expect(ms).to.be.lessThan(500);
      expect(report.kind).to.be.oneOf(['dsn', 'arf', 'other']);
      expect(report.recipients.length).to.be.at.most(100);
    });
  }

  it('still reads the Return-Path, Message-ID and recipients of an ordinary DSN', async () => {
    const r = await parseReport(
      dsn('fbl@b.test', {
        returned: 'Return-Path: <Bounce+x@bounces.example>\r\nMessage-ID: <m1@x.test>\r\nFrom: "A" <a@b.test>',
      }),
    );
    expect(r.original).to.include({
      return_path: 'bounce+x@bounces.example',
      message_id: '<m1@x.test>',
      from: 'a@b.test',
    });
    expect(r.recipients[0]).to.include({ address: 'someone@dest.test', status: '5.1.1', action: 'failed' });
  });

  it('splits reply lines as before (code, enhanced code, text)', async () => {
    expect(parseReplyLine('550-5.1.1 <x@y.test>: User unknown')).to.deep.equal({
      code: 550,
      enhanced: '5.1.1',
      text: '550-5.1.1 <x@y.test>: User unknown',
    });
    expect(parseReplyLine('421 Try again 4.7.0 later')).to.deep.equal({
      code: 421,
      enhanced: '4.7.0',
      text: '421 Try again 4.7.0 later',
    });
    expect(parseReplyLine('550')).to.include({ code: 550, enhanced: null });
    expect(parseReplyLine('5501 nope').code).to.equal(null);
    const { ms } = await cpuMsOf(() => parseReplyLine(`550 ${' '.repeat(50_000)}\u2028x\u2028`));
    expect(ms, 'CPU ms').to.be.lessThan(100);
  });
});
