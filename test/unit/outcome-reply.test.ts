// A live SMTP reply read as a bounce notice's reply is (outbound/outcome.ts readReply): the MX host that answered
// picks the provider's own table, as a notice's Remote-MTA does, before the generic phrase lists.
import { expect } from 'chai';
import { readReply, toOutcome } from '../../src/outbound/outcome.js';

const policy = { minSeconds: 60, maxSeconds: 3600, lifetimeSeconds: 86_400 } as never;

describe("outbound: a live reply's reason by the host that answered", () => {
  it("Outlook's 451 4.7.500 Server busy is its throttling (speeding) from its own MX, not elsewhere", () => {
    const reply =
      '451 4.7.500 Server busy. Please try again later from [192.0.2.10]. (S77714) [DM6PR11MB.namprd11.prod.outlook.com]';
    expect(readReply(reply, 'RCPT', 'acme-com.mail.protection.outlook.com')).to.include({ reason: 'speeding' });
    expect(readReply(reply, 'RCPT', 'mx.example.net').reason).to.not.equal('speeding');
  });

  it("Google's inactive account is a suspension from Google's MX", () => {
    const reply =
      '550 5.2.1 The email account that you tried to reach is inactive. For more information, go to https://support.google.com/mail/?p=DisabledUser';
    expect(readReply(reply, 'RCPT', 'gmail-smtp-in.l.google.com')).to.deep.equal({ reason: 'suspend', hard: false });
  });

  it('a deferral carries the reason its MX host gives it', () => {
    const o = toOutcome(
      { id: 1, attempts: 0, first_attempt_at: 0 },
      {
        kind: 'deferred',
        reply: '451 4.7.500 Server busy. Please try again later from [192.0.2.10].',
        command: 'RCPT',
      } as never,
      { mx_host: 'acme-com.mail.protection.outlook.com', duration_ms: 5, source: 'smtp' },
      policy,
      1000,
      0.5,
    );
    expect(o.data).to.include({ reason: 'speeding' });
  });
});
