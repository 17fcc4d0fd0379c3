// The provider registry (src/core/providers): every entry is placed in its order list, no host belongs to two
// providers, and registryReason asks its sources in PRECEDENCE order.
import { expect } from 'chai';
import {
  CODE_RULES,
  CODE_RULE_ORDER,
  HOST_ORDER,
  NOTICE_FORMATS,
  NOTICE_ORDER,
  PRECEDENCE,
  PROVIDERS,
  registryReason,
} from '../../src/core/providers/index.js';

const gmailQuota =
  '452-4.2.2 The email account that you tried to reach is over quota. Please direct the recipient to https://support.google.com/mail/?p=OverQuotaTemp';
const google = {
  text: gmailQuota,
  status: '4.2.2',
  replycode: '452',
  rhost: 'gmail-smtp-in.l.google.com',
  destination: 'gmail.com',
};

describe('provider registry', () => {
  it('places every notice, code rule and host table exactly once', () => {
    expect(NOTICE_FORMATS.map((f) => f.family)).to.deep.equal(NOTICE_ORDER);
    expect(NOTICE_FORMATS.length).to.equal(PROVIDERS.flatMap((p) => p.notices ?? []).length);
    expect(CODE_RULES.map((r) => r.name)).to.deep.equal(CODE_RULE_ORDER);
    expect(CODE_RULES.length).to.equal(PROVIDERS.flatMap((p) => p.codeRules ?? []).length);
    expect(
      PROVIDERS.filter((p) => p.hosts)
        .map((p) => p.name)
        .sort(),
    ).to.deep.equal([...HOST_ORDER].sort());
    expect(PROVIDERS.filter((p) => p.hosts && !p.byHost)).to.deep.equal([]);
  });

  it('gives each host to one provider only', () => {
    const all = PROVIDERS.flatMap((p) => (p.hosts ?? []).map((h) => [p.name, h] as const));
    for (const [name, h] of all) {
      const host = `x${h.startsWith('.') ? h : `.${h}`}`;
      const owners = all.filter(([, o]) => host.endsWith(o.startsWith('.') ? o : `.${o}`)).map(([n]) => n);
      expect([...new Set(owners)], h).to.deep.equal([name]);
    }
  });

  it('asks its sources in PRECEDENCE order', () => {
    expect(PRECEDENCE).to.deep.equal([
      'notice-definite',
      'local-agent',
      'remote-host',
      'notice',
      'code-rules',
      'vendor-phrases',
    ]);
    // a definite reason from the notice's own reader wins over the remote host's table
    expect(registryReason({ ...google, notice: 'blocked' })).to.equal('blocked');
    // a local delivery agent's words (here in the notice's own text, the lead) come before the remote host's table...
    const dovecot = "Your message to <nekochan> was automatically rejected:\nMailbox doesn't exist: nekochan";
    expect(registryReason({ ...google, lead: dovecot })).to.equal('userunknown');
    // ...but not for a reply to an SMTP command before DATA (go-sisimai lda.Find)
    expect(registryReason({ ...google, command: 'RCPT', lead: dovecot })).to.equal('mailboxfull');
    expect(registryReason({ text: 'procmail: Quota exceeded while writing', status: null, replycode: null })).to.equal(
      'mailboxfull',
    );
    expect(
      registryReason({
        text: 'procmail: Quota exceeded while writing',
        status: null,
        replycode: null,
        command: 'RCPT',
      }),
    ).to.equal(null);
    // a retry-class reason from the notice yields to the remote host's table...
    expect(registryReason({ ...google, notice: 'userunknown' })).to.equal('mailboxfull');
    // ...and is kept when no host table answers
    expect(
      registryReason({ ...google, rhost: 'mx.example.net', destination: 'example.net', notice: 'userunknown' }),
    ).to.equal('userunknown');
    // then a provider's own code, then a vendor phrase; nothing known: null (the generic reading decides)
    expect(registryReason({ text: '554 AUP#CXBL rejected', status: null, replycode: '554' })).to.equal('blocked');
    expect(
      registryReason({ text: '550 5.1.1 RESOLVER.ADR.RecipNotFound; not found', status: '5.1.1', replycode: '550' }),
    ).to.equal('userunknown');
    expect(registryReason({ text: 'Error: OFR_506 [506] spam', status: null, replycode: null })).to.equal(
      'spamdetected',
    );
    expect(registryReason({ text: 'user not listed in Domino Directory', status: null, replycode: null })).to.equal(
      'userunknown',
    );
    expect(registryReason({ text: '550 5.1.1 no such user', status: '5.1.1', replycode: '550' })).to.equal(null);
  });

  it('reads host-gated phrases only when the provider is named', () => {
    const text = '550 mailbox not found';
    expect(registryReason({ text, status: null, replycode: '550', rhost: 'mx3.qq.com' })).to.equal('userunknown');
    expect(registryReason({ text, status: null, replycode: '550', rhost: 'mx.example.org' })).to.equal(null);
  });
});
