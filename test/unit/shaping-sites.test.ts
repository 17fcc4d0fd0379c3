// Site membership: `*` is one or more whole labels; a domain belongs to the first site (in rule order) whose
// pattern matches one of its MX hosts; otherwise its site is named by its sorted, lower-case MX host set.
import { expect } from 'chai';
import fs from 'node:fs';
import { loadShaping } from '../../src/core/shaping/rules.js';
import { mxMatches, siteMatcher, unknownSiteName } from '../../src/core/shaping/sites.js';

const BUILT_IN = JSON.parse(fs.readFileSync(new URL('../../config/shaping.json', import.meta.url), 'utf8'));

describe('shaping sites: MX patterns', () => {
  it('* matches one or more labels, never zero, never part of a label', () => {
    expect(mxMatches('*.google.com', 'aspmx.l.google.com')).to.equal(true);
    expect(mxMatches('*.google.com', 'ALT1.ASPMX.L.GOOGLE.COM.')).to.equal(true);
    expect(mxMatches('*.google.com', 'smtp.google.com')).to.equal(true);
    expect(mxMatches('*.google.com', 'google.com')).to.equal(false);
    expect(mxMatches('*.google.com', 'notgoogle.com')).to.equal(false);
    expect(mxMatches('*.google.com', 'mx.evilgoogle.com')).to.equal(false);
    expect(mxMatches('*.google.com', 'aspmx.l.google.com.evil.net')).to.equal(false);
    expect(mxMatches('mx.*.example', 'mx.a.b.example')).to.equal(true);
    expect(mxMatches('mx.*.example', 'mx.example')).to.equal(false);
    expect(mxMatches('mx.*.example', 'mx2.a.example')).to.equal(false);
    expect(mxMatches('mx1.example', 'mx1.example')).to.equal(true);
    expect(mxMatches('mx1.example', 'a.mx1.example')).to.equal(false);
  });

  it('names an unknown site by its MX hosts: lower-case, sorted, comma-joined, once each', () => {
    expect(unknownSiteName(['MX2.Example.net.', 'mx1.example.net', 'mx2.example.net'])).to.equal(
      'mx1.example.net,mx2.example.net',
    );
  });
});

describe('shaping sites: site of a domain', () => {
  const m = siteMatcher(loadShaping(BUILT_IN).sites);

  it('puts gmail.com and a Google Workspace domain on one site', () => {
    const gmail = ['gmail-smtp-in.l.google.com', 'alt1.gmail-smtp-in.l.google.com'];
    const workspace = ['aspmx.l.google.com', 'alt1.aspmx.l.google.com', 'aspmx2.googlemail.com'];
    expect(m.siteOf(gmail)).to.equal('google');
    expect(m.siteOf(workspace)).to.equal('google');
    expect(m.siteOf(['smtp.google.com'])).to.equal('google');
  });

  it('knows the other providers by their MX hosts', () => {
    expect(m.siteOf(['hotmail-com.olc.protection.outlook.com'])).to.equal('outlook');
    expect(m.siteOf(['contoso-com.mail.protection.outlook.com'])).to.equal('office365');
    expect(m.siteOf(['mta5.am0.yahoodns.net', 'mta6.am0.yahoodns.net'])).to.equal('yahoo');
    expect(m.siteOf(['mx-aol.mail.gm0.yahoodns.net'])).to.equal('yahoo');
    expect(m.siteOf(['mx01.mail.icloud.com'])).to.equal('apple');
    expect(m.siteOf(['mx00.gmx.net'])).to.equal('gmx-webde');
    expect(m.siteOf(['mx-ha03.web.de'])).to.equal('gmx-webde');
    expect(m.siteOf(['mxs.mail.ru'])).to.equal('mailru');
    expect(m.siteOf(['mx.yandex.ru'])).to.equal('yandex');
    expect(m.siteOf(['mx3.qq.com'])).to.equal('qq');
    expect(m.siteOf(['smtp-in.orange.fr'])).to.equal('orange');
    expect(m.siteOf(['mx1a1.comcast.net'])).to.equal('comcast');
  });

  it('takes the first site in rule order when hosts match several', () => {
    const s = loadShaping(BUILT_IN, {
      sites: { first: { mx: ['mx.first.example'] }, second: { mx: ['*.second.example'] } },
    });
    expect(siteMatcher(s.sites).siteOf(['a.second.example', 'mx.first.example'])).to.equal('first');
  });

  it('gives an unmatched domain a site of its own MX host set', () => {
    expect(m.siteOf(['MX2.small.example', 'mx1.small.example'])).to.equal('mx1.small.example,mx2.small.example');
    expect(m.siteOf(['mx1.small.example', 'mx2.small.example'])).to.equal(
      m.siteOf(['mx2.small.example', 'mx1.small.example']),
    );
  });
});
