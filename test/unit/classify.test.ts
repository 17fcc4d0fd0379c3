// Checks the reply classifier against real-world SMTP reply lines (test/fixtures/reply-lines.json)
// and the small helpers around it (parseReplyLine, findStatus, pseudo status, hard flag).
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { classifyReply, classifyBounce, parseReplyLine, findStatus } from '../../src/core/classify.js';
import { isHard } from '../../src/core/bounce-reasons.js';
import { providerOf, providerReason } from '../../src/core/providers/index.js';

interface Line {
  source: string;
  line: string;
  reason: string;
  hard: boolean | null;
}
const lines = JSON.parse(readFileSync(new URL('../fixtures/reply-lines.json', import.meta.url), 'utf8')) as Line[];

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
  it('gives 4.3.0 no reason of its own: onhold unless the text says more (go-sisimai smtp/status)', () => {
    const bare = classifyBounce({
      status: '4.3.0',
      diagnostic: '451 4.3.0 This message could not be delivered due to a recipient error.',
    });
    expect([bare.reason, bare.hard]).to.deep.equal(['onhold', false]);
    expect(classifyBounce({ status: '4.3.0', diagnostic: 'mailbox is full' }).reason).to.equal('mailboxfull');
  });
  it('gives no status-bound reason (mailboxfull, suspend ...) to a text without a status: Sisimai reads on', () => {
    const text = 'Your mail to this address could not be delivered: full mailbox. Too many connections, try later.';
    expect(classifyBounce({ diagnostic: text, spec: 'SMTP', action: 'failed' }).reason).to.equal('toomanyconn');
    expect(classifyBounce({ status: '5.0.0', diagnostic: text, spec: 'SMTP', action: 'failed' }).reason).to.equal(
      'mailboxfull',
    );
  });
  it("reads a detailed status's diagnostic without the notice's words around it", () => {
    const facts = {
      status: '4.4.4',
      spec: 'SMTP',
      action: 'delayed',
      diagnostic: '454 4.4.4 [internal] no MX or A for domain',
      context: 'Your message could not be delivered for 2 days, 4 hours. It will be retried.',
    };
    expect(classifyBounce(facts).reason).to.equal('networkerror');
    // the MTA's own words (X-Postfix) that name a reason are read alone too
    const postfix = {
      status: '4.0.0',
      spec: 'X-Postfix',
      action: 'delayed',
      diagnostic: 'temporary failure. Command output: scanner: cannot reach its service',
      context: 'This is the mail system. Your message has been delayed; it will be retried.',
    };
    expect(classifyBounce(postfix).reason).to.equal('mailererror');
    // a generic status still reads the notice's words
    expect(classifyBounce({ ...facts, status: '4.0.0', diagnostic: '454 no MX for domain' }).reason).to.equal(
      'expired',
    );
  });
  it('makes Sisimai pseudo status codes when no enhanced code exists', () => {
    expect(classifyBounce({ diagnostic: 'delivery time expired' }).status).to.equal('4.0.947');
    expect(classifyBounce({ diagnostic: '550 Unknown user x@example.org' }).status).to.equal('5.0.910');
    // a code-less expiry is temporary unless the notice calls the failure permanent (Gmail)
    expect(classifyBounce({ diagnostic: 'failed permanently: delivery time expired' }).status).to.equal('5.0.947');
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

describe('classifyBounce: a reply text that names a reason beats a generic status code', () => {
  // Postfix writes "Status: 5.0.0" and "Diagnostic-Code: X-Postfix; host X said: 550 ..." (php-bounce-handler 45.eml)
  const postfix = (said: string) => ({
    status: '5.0.0',
    spec: 'X-Postfix',
    action: 'failed',
    command: 'RCPT',
    diagnostic: `host mx.example.net[192.0.2.1] said: ${said} (in reply to RCPT TO command)`,
  });
  it('5.0.0 with "550 ... User unknown" under X-Postfix reads userunknown (hard)', () => {
    const r = classifyBounce(postfix('550 RCPT TO:<a@example.net> User unknown'));
    expect([r.reason, r.hard]).to.deep.equal(['userunknown', true]);
  });
  it('5.0.0 with "552 ... mailbox is full" under X-Postfix reads mailboxfull (soft)', () => {
    const r = classifyBounce(postfix('552 Requested mail action aborted: mailbox is full'));
    expect([r.reason, r.hard]).to.deep.equal(['mailboxfull', false]);
  });
  it('5.0.0 with a reason named without any reply code under X-Postfix reads it ("Name or service not known")', () => {
    const r = classifyBounce({
      status: '5.0.0',
      spec: 'X-Postfix',
      action: 'failed',
      diagnostic: '[dest.example.com]: Name or service not known',
    });
    expect([r.reason, r.hard]).to.deep.equal(['hostunknown', true]);
  });
  it("under another MTA's own Diagnostic-Code type (not X-Postfix) a 5.0.0 text is not read with the SMTP probes", () => {
    // Sisimai's Postfix decoder turns X-Postfix into SMTP; any other X- type goes straight to its fallback reading,
    // which names no hostunknown or userunknown: the text is onhold there
    const facts = {
      status: '5.0.0',
      action: 'failed',
      diagnostic: 'Host or domain name not found. Name service error for name=example.invalid type=A: Host not found',
    };
    const r = classifyBounce({ ...facts, spec: 'X-Mail-Gateway' });
    expect([r.reason, r.hard]).to.deep.equal(['onhold', false]);
    expect(classifyBounce({ ...facts, spec: 'X-Postfix' }).reason).to.equal('hostunknown');
  });
  it('a retry-class reason of the notice (Exim delay warning: expired) yields to a reply that names spam', () => {
    const r = classifyBounce({
      status: null,
      reason: 'expired',
      action: 'delayed',
      command: 'DATA',
      diagnostic:
        'Delay reason: SMTP error from remote mail server after DATA: host mx.example.net: 451 SPAM not accepted',
    });
    expect([r.reason, r.hard]).to.deep.equal(['spamdetected', false]);
  });
  it('a status that names a reason keeps deciding under a non-SMTP type (x-unix 5.3.0: mailererror)', () => {
    const r = classifyBounce({
      status: '5.3.0',
      spec: 'x-unix',
      action: 'failed',
      diagnostic: 'Command died with status 1',
    });
    expect(r.reason).to.equal('mailererror');
  });
});

describe("classifyBounce: a provider's own phrases are not generic (Sisimai keeps them in its Rhost tables)", () => {
  it("reads Google's and Microsoft's own texts generically when no host table applies", () => {
    const read = (status: string, reply: string, text: string, command: string) =>
      classifyBounce({ status, replycode: reply, diagnostic: text, command }).reason;
    // Sisimai::Rhost::Google's "inactive" account; generically 5.2.1 is filtered
    expect(read('5.2.1', '550', '550 5.2.1 The email account that you tried to reach is inactive.', 'RCPT')).to.equal(
      'filtered',
    );
    // Sisimai::Rhost::Microsoft's 4.7.500 "Server busy" (speeding there); generically a 4.7.x status: securityerror
    expect(
      read('4.7.500', '451', '451 4.7.500 Server busy. Please try again later from [192.0.2.1].', 'DATA'),
    ).to.equal('securityerror');
  });
});

describe('provider (Sisimai Rhost) tables, gated on the remote host or recipient domain', () => {
  const gmail = 'gmail-smtp-in.l.google.com';
  const cases: [string | null, string | null, string, string, string, string | null][] = [
    [
      gmail,
      null,
      '5.7.26',
      '550',
      '550-5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users, and has been blocked. The sender must authenticate with at least one of SPF or DKIM. Gmail requires all senders to authenticate with either SPF or DKIM.',
      'authfailure',
    ],
    [
      gmail,
      null,
      '4.2.2',
      '452',
      '452-4.2.2 The email account that you tried to reach is over quota. Please direct the recipient to https://support.google.com/mail/?p=OverQuotaTemp',
      'mailboxfull',
    ],
    [
      gmail,
      null,
      '5.7.1',
      '550',
      '550-5.7.1 [192.0.2.1] Our system has detected that this message is likely unsolicited mail. To reduce the amount of spam sent to Gmail, this message has been blocked.',
      'spamdetected',
    ],
    [
      gmail,
      null,
      '4.7.0',
      '421',
      '421-4.7.0 [192.0.2.1] Our system has detected an unusual rate of unsolicited mail originating from your IP address.',
      'blocked',
    ],
    [
      gmail,
      null,
      '5.7.1',
      '550',
      '550-5.7.1 Messages missing a valid address in the From: header, or having no From: header, are not accepted.',
      'notcompliantrfc',
    ],
    [
      'aspmx.l.google.com',
      null,
      '5.2.1',
      '550',
      '550-5.2.1 The email account that you tried to reach is inactive.',
      'suspend',
    ],
    // a Gmail text from a host that is not Google's: no table applies
    ['mx.example.net', 'example.net', '4.7.0', '421', '421-4.7.0 an unusual rate of unsolicited mail', null],
    [
      'x.mail.protection.outlook.com',
      null,
      '5.7.606',
      '550',
      '550 5.7.606 Access denied, banned sending IP [192.0.2.1].',
      'blocked',
    ],
    [
      'x.mail.protection.outlook.com',
      null,
      '5.7.504',
      '550',
      '550 5.7.504 Recipient address rejected: Access denied',
      'suspend',
    ],
    [
      'x.olc.protection.outlook.com',
      null,
      '5.7.1',
      '550',
      "550 5.7.1 Unfortunately, messages from [192.0.2.1] weren't sent. Please contact your Internet service provider. (S3140)",
      null,
    ],
    [
      'x.olc.protection.outlook.com',
      null,
      '5.7.0',
      '550',
      "550 SC-001 (BAY004-MC1F41) Unfortunately, messages from 192.0.2.1 weren't sent.",
      'badreputation',
    ],
    [null, 'icloud.com', '5.1.6', '550', '550 5.1.6 recipient no longer on server: kijitora@icloud.com', 'hasmoved'],
    ['mx.ezweb.ne.jp', null, '5.0.0', '550', 'The response was: 550 : User unknown', 'filtered'],
    [
      'us-smtp-1.mimecast.com',
      null,
      '5.0.0',
      '550',
      '550 Rejected by header-based Anti-Spoofing policy: a@example.org',
      'policyviolation',
    ],
    ['mfsmax.docomo.ne.jp', null, '5.2.0', '550', '550 Unknown user kijitora@docomo.ne.jp', 'filtered'],
    [
      'cluster1.eu.messagelabs.com',
      null,
      '5.0.0',
      '553',
      '553-Sorry, your email address has been blacklisted',
      'rejected',
    ],
  ];
  for (const [rhost, destination, status, replycode, text, reason] of cases) {
    it(`${rhost ?? destination}: ${text.slice(0, 60)}`, () => {
      expect(providerReason({ text, status, replycode, rhost, destination })).to.equal(reason);
    });
  }
  it('finds the provider from the remote host, else from the recipient domain', () => {
    expect(providerOf('gmail-smtp-in.l.google.com', 'example.org')).to.equal('Google');
    expect(providerOf(null, 'docomo.ne.jp')).to.equal('NTTDOCOMO');
    expect(providerOf(null, 'gmail.com')).to.equal(null);
    expect(providerOf('mx.example.org', 'example.org')).to.equal(null);
  });
});

describe('classifyBounce: the mailboxfull phrases are Sisimai’s, no looser', () => {
  const smtp = (diagnostic: string) => ({ status: '5.0.0', spec: 'SMTP', action: 'failed', diagnostic });
  it('"rejected: over quota" under a generic status reads onhold (Sisimai lists no bare "over quota")', () => {
    expect(classifyBounce(smtp('552 <ann@example.net> rejected: over quota')).reason).to.equal('onhold');
    expect(classifyBounce(smtp('552 mailbox quota nearly reached, message kept out')).reason).to.equal('onhold');
  });
  it('its listed phrases still read mailboxfull', () => {
    expect(classifyBounce(smtp('552 5.2.2 <ann@example.net>: user is over quota')).reason).to.equal('mailboxfull');
    expect(classifyBounce(smtp('552 maildir over quota')).reason).to.equal('mailboxfull');
    expect(classifyBounce(smtp('552 Requested action aborted: mailbox is full')).reason).to.equal('mailboxfull');
  });
});
