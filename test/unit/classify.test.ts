// Checks the reply classifier against real-world SMTP reply lines (test/fixtures/reply-lines.json)
// and the small helpers around it (parseReplyLine, findStatus, pseudo status, hard flag).
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { classifyReply, classifyBounce, parseReplyLine, findStatus } from '../../src/core/classify.js';
import { isHard } from '../../src/core/bounce-reasons.js';

interface Line { source: string; line: string; reason: string; hard: boolean | null }
const lines = JSON.parse(
  readFileSync(new URL('../fixtures/reply-lines.json', import.meta.url), 'utf8'),
) as Line[];

describe('classifyReply on real reply lines', () => {
  it('has at least 60 fixtures', () => expect(lines.length).to.be.at.least(60));
  for (const l of lines) {
    it(`${l.source}: ${l.line.slice(0, 70)}`, () => {
      expect(classifyReply(parseReplyLine(l.line))).to.deep.equal({ reason: l.reason, hard: l.hard });
    });
  }
});

describe('parseReplyLine', () => {
  it('splits code, enhanced code and text', () => {
    const r = parseReplyLine('550 5.1.1 <x@y>: Recipient address rejected: User unknown');
    expect(r.code).to.equal(550);
    expect(r.enhanced).to.equal('5.1.1');
    expect(r.text).to.contain('User unknown');
  });
  it('handles multi-line replies and missing enhanced codes', () => {
    expect(parseReplyLine('550-5.7.26 DMARC\n550 5.7.26 policy').enhanced).to.equal('5.7.26');
    expect(parseReplyLine('550 Unrouteable address').enhanced).to.equal(null);
    expect(parseReplyLine('no code here').code).to.equal(null);
  });
});

describe('classification helpers', () => {
  it('enhanced code decides where specific', () => {
    expect(classifyReply({ code: 550, enhanced: '5.1.1', text: 'whatever' }).reason).to.equal('userunknown');
    expect(classifyReply({ code: 552, enhanced: '5.2.2', text: 'quota' }).reason).to.equal('mailboxfull');
    expect(classifyReply({ code: 550, enhanced: '5.1.2', text: 'bad host' }).reason).to.equal('hostunknown');
  });
  it('makes Sisimai pseudo status codes when no enhanced code exists', () => {
    expect(classifyBounce({ diagnostic: 'retry timeout exceeded' }).status).to.equal('4.0.947');
    expect(classifyBounce({ diagnostic: '550 Unknown user x@example.org' }).status).to.equal('5.0.910');
  });
  it('finds status codes but not IP addresses or versions', () => {
    expect(findStatus('host 192.0.2.1 said 550 5.2.2 full')).to.equal('5.2.2');
    expect(findStatus('v5.1.1 and 5.0.0 only')).to.equal('5.0.0');
  });
  it('hard only for address problems', () => {
    expect(isHard('userunknown')).to.equal(true);
    expect(isHard('notaccept', 421)).to.equal(false);
    expect(isHard('notaccept', 556)).to.equal(true);
    expect(isHard('blocked', 550)).to.equal(false);
    expect(isHard('feedback')).to.equal(null);
  });
});
