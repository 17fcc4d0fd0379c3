// Reactions: a reply is classified by the first matching rule (site-scoped rules only for their site); the
// per-(IP, site) state goes open → throttled (halved per reply, doubled back per quiet step) → suspended → open.
import { expect } from 'chai';
import fs from 'node:fs';
import { loadShaping } from '../../src/core/shaping/rules.js';
import {
  classifyReply,
  openState,
  react,
  refresh,
  resume,
  stateOf,
  suspend,
  throttledConnections,
} from '../../src/core/shaping/reactions.js';

const BUILT_IN = JSON.parse(fs.readFileSync(new URL('../../config/shaping.json', import.meta.url), 'utf8'));
const { reactions } = loadShaping(BUILT_IN);
const action = (reply: string, site = 'mx.other.example') => classifyReply(reply, site, reactions)?.action ?? null;

describe('shaping reactions: classification', () => {
  it('recognises blocklist replies', () => {
    expect(
      action(
        '554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org; https://www.spamhaus.org/query/ip/192.0.2.1',
      ),
    ).to.equal('blocklist');
    expect(action('550 5.7.1 Your IP 192.0.2.1 is listed at bl.example-rbl.net')).to.equal('blocklist');
    expect(action('550 5.7.1 Rejected: see http://www.barracudanetworks.com/reputation/?pr=1&ip=192.0.2.1')).to.equal(
      'blocklist',
    );
    expect(action('554 5.7.1 rejected because of RBL listing')).to.equal('blocklist');
    expect(
      action("553 5.7.1 [BL21] Connections will not be accepted from 192.0.2.1, because the ip is in Spamhaus's list"),
    ).to.equal('blocklist');
    expect(
      action(
        "550 5.7.1 Unfortunately, messages from [192.0.2.1] weren't sent. Please contact your Internet service provider since part of their network is on our block list (S3150)",
      ),
    ).to.equal('blocklist');
  });

  it('suspends for a listed domain rather than moving IPs (Spamhaus DBL)', () => {
    expect(action('554 5.7.1 Your email was rejected due to having a domain present in the Spamhaus DBL')).to.equal(
      'suspend',
    );
  });

  it("suspends and throttles on the providers' replies", () => {
    expect(
      action(
        '421-4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address.',
        'google',
      ),
    ).to.equal('suspend');
    expect(
      action(
        '421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints',
        'yahoo',
      ),
    ).to.equal('suspend');
    expect(action('451 4.7.500 Server busy. Please try again later from [192.0.2.1]. (AS843)', 'outlook')).to.equal(
      'suspend',
    );
    expect(action('421 Too many connections, try again later')).to.equal('throttle');
    expect(action('421 4.7.0 Rate limit exceeded')).to.equal('throttle');
    expect(action('550 Ip frequency limited [IP:192.0.2.1]', 'qq')).to.equal('suspend');
    expect(action('250 2.0.0 OK')).to.equal(null);
    expect(action('550 5.1.1 No such user')).to.equal(null);
  });

  it('applies a site-scoped rule only to replies of that site', () => {
    expect(action('421 4.7.0 [TSS04] deferred', 'yahoo')).to.equal('suspend');
    expect(action('421 4.7.0 [TSS04] deferred', 'mx.other.example')).to.equal(null);
  });
});

describe('shaping reactions: state machine', () => {
  const T0 = 1_700_000_000_000;

  it('throttle halves the rate per reply, then doubles it back every quiet step to open', () => {
    const s = openState();
    react(s, 'throttle', 600, T0, '421 rate limited');
    expect(s.factor).to.equal(0.5);
    expect(stateOf(s, T0)).to.equal('throttled');
    react(s, 'throttle', 600, T0 + 60_000, '421 rate limited');
    expect(s.factor).to.equal(0.25);
    refresh(s, T0 + 60_000 + 599_999);
    expect(s.factor).to.equal(0.25); // the step restarted with the second reply
    refresh(s, T0 + 60_000 + 600_000);
    expect(s.factor).to.equal(0.5);
    expect(stateOf(s, T0 + 660_000)).to.equal('throttled');
    refresh(s, T0 + 60_000 + 1_200_000);
    expect(s.factor).to.equal(1);
    expect(stateOf(s, T0 + 1_260_000)).to.equal('open');
    expect(s.reason).to.equal(null);
  });

  it('throttle cuts connections too, never below one', () => {
    expect(throttledConnections(10, 1)).to.equal(10);
    expect(throttledConnections(10, 0.5)).to.equal(5);
    expect(throttledConnections(10, 1 / 64)).to.equal(1);
  });

  it('suspend holds until T, then the lane is open again', () => {
    const s = openState();
    react(s, 'suspend', 900, T0, '421 4.7.28');
    refresh(s, T0 + 899_999);
    expect(stateOf(s, T0 + 899_999)).to.equal('suspended');
    expect(s.suspendedUntil).to.equal(T0 + 900_000);
    refresh(s, T0 + 900_000);
    expect(stateOf(s, T0 + 900_000)).to.equal('open');
    expect(s.suspendedUntil).to.equal(0);
  });

  it('blocklist suspends and marks the lane blocklisted until T; a shorter later suspension does not shorten it', () => {
    const s = openState();
    react(s, 'blocklist', 7200, T0, 'listed');
    react(s, 'suspend', 60, T0 + 1000, 'busy');
    expect(s.blocklisted).to.equal(true);
    expect(s.suspendedUntil).to.equal(T0 + 7_200_000);
    refresh(s, T0 + 7_200_000);
    expect(s.blocklisted).to.equal(false);
    expect(stateOf(s, T0 + 7_200_000)).to.equal('open');
  });

  it('operator suspend without seconds lasts until resume', () => {
    const s = openState();
    suspend(s, T0, null, 'maintenance');
    refresh(s, T0 + 365 * 86_400_000);
    expect(stateOf(s, T0 + 365 * 86_400_000)).to.equal('suspended');
    react(s, 'throttle', 60, T0, 'x');
    resume(s);
    expect(stateOf(s, T0)).to.equal('open');
    expect(s.factor).to.equal(1);
  });
});
