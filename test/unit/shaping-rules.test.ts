// Shaping rules: the built-in config/shaping.json loads and is sourced and linear; rates parse to per-ms;
// the operator file merges as operations.md says; bad input is refused naming the file and field.
import { expect } from 'chai';
import fs from 'node:fs';
import { checkSync } from 'recheck';
import { loadShaping, parseRate, ShapingError } from '../../src/core/shaping/rules.js';

const BUILT_IN = JSON.parse(fs.readFileSync(new URL('../../config/shaping.json', import.meta.url), 'utf8'));
const clone = () => JSON.parse(JSON.stringify(BUILT_IN));

describe('shaping rules: built-in file', () => {
  it('loads, with every provider of issue 12 and a source note on every entry', () => {
    const s = loadShaping(BUILT_IN);
    expect(s.sites.map((x) => x.name)).to.include.members([
      'google',
      'outlook',
      'office365',
      'yahoo',
      'apple',
      'comcast',
      'gmx-webde',
      'orange',
      'mailru',
      'yandex',
      'qq',
    ]);
    for (const [name, site] of Object.entries(BUILT_IN.sites as Record<string, { source?: string }>))
      expect(site.source, name).to.be.a('string').with.length.above(0);
    for (const r of BUILT_IN.reactions as { source?: string; match: string }[])
      expect(r.source, r.match).to.be.a('string').with.length.above(0);
    expect(BUILT_IN.default.source).to.be.a('string');
    expect(BUILT_IN.warmup.source).to.be.a('string');
    expect(s.warmup.schedule.length).to.be.within(25, 35);
    expect(s.limitsOf('comcast').connections).to.equal(25);
    expect(s.limitsOf('yahoo').connections).to.equal(s.default.connections); // not given: from default
    expect(s.limitsOf('mx1.example.net').connections).to.equal(s.default.connections);
  });

  it('every regular expression is linear (recheck)', function () {
    this.timeout(60_000);
    for (const r of BUILT_IN.reactions as { match: string }[]) {
      const d = checkSync(r.match, 'i');
      expect(d.status, `${r.match}: ${JSON.stringify(d)}`).to.equal('safe');
    }
  });
});

describe('shaping rules: rates', () => {
  it('parses N/s, N/min, N/h, N/d to messages per ms; null is no cap', () => {
    expect(parseRate('100/min')).to.be.closeTo(100 / 60_000, 1e-15);
    expect(parseRate('5000/h')).to.be.closeTo(5000 / 3_600_000, 1e-15);
    expect(parseRate('20000/d')).to.be.closeTo(20000 / 86_400_000, 1e-15);
    expect(parseRate('3/s')).to.equal(0.003);
    expect(parseRate(null)).to.equal(null);
  });

  it('refuses other forms, naming the field', () => {
    for (const bad of ['100', '0/s', '10/m', '10 per min', '-1/h', '1.5/s', '/s', '10/sec']) {
      expect(() => parseRate(bad, 'sites.x.rate'), bad).to.throw(ShapingError, /sites\.x\.rate: invalid rate/);
    }
    const f = clone();
    f.sites.google.rate = '10/fortnight';
    expect(() => loadShaping(f)).to.throw(
      ShapingError,
      /built-in file: sites\.google\.rate: invalid rate "10\/fortnight"/,
    );
  });
});

describe('shaping rules: operator file merge', () => {
  it('merges sites by name field by field; a new site needs mx and matches before the built-in ones', () => {
    const s = loadShaping(BUILT_IN, {
      sites: { google: { rate: '100/min' }, 'big-corp': { mx: ['*.corp-mail.example'], connections: 2 } },
    });
    const google = s.sites.find((x) => x.name === 'google')!;
    expect(google.mx).to.deep.equal(BUILT_IN.sites.google.mx); // kept
    expect(google.limits.connections).to.equal(BUILT_IN.sites.google.connections); // kept
    expect(google.limits.rate).to.equal('100/min'); // replaced
    expect(google.limits.perMs).to.be.closeTo(100 / 60_000, 1e-15);
    expect(s.sites[0].name).to.equal('big-corp');
    expect(s.limitsOf('big-corp')).to.include({
      connections: 2,
      messages_per_connection: BUILT_IN.default.messages_per_connection,
      rate: null,
    });
    expect(() => loadShaping(BUILT_IN, { sites: { newsite: { connections: 3 } } })).to.throw(
      ShapingError,
      /operator file: sites\.newsite\.mx is required/,
    );
  });

  it('puts operator reactions before the built-in ones', () => {
    const s = loadShaping(BUILT_IN, { reactions: [{ match: 'spamhaus', action: 'throttle', seconds: 60 }] });
    expect(s.reactions[0]).to.include({ pattern: 'spamhaus', action: 'throttle', seconds: 60 });
    expect(s.reactions.length).to.equal(BUILT_IN.reactions.length + 1);
    expect(s.reactions[0].match.test('BLOCKED using SPAMHAUS')).to.equal(true); // case-insensitive
  });

  it('replaces default and warmup field by field; other sites follow the new default', () => {
    const s = loadShaping(BUILT_IN, { default: { connections: 3 }, warmup: { schedule: [1, 2] } });
    expect(s.default).to.include({
      connections: 3,
      messages_per_connection: BUILT_IN.default.messages_per_connection,
      rate: BUILT_IN.default.rate,
    });
    expect(s.limitsOf('yahoo').connections).to.equal(3);
    expect(s.limitsOf('google').connections).to.equal(BUILT_IN.sites.google.connections);
    expect(s.warmup.schedule).to.deep.equal([1, 2]);
    expect(loadShaping(BUILT_IN, {}).warmup.schedule).to.deep.equal(BUILT_IN.warmup.schedule);
  });
});

describe('shaping rules: validation', () => {
  const cases: [unknown, RegExp][] = [
    [{ sites: { google: { conections: 3 } } }, /operator shaping file: unknown field sites\.google\.conections/],
    [{ default: { connections: 0 } }, /operator shaping file: default\.connections/],
    [
      { reactions: [{ match: 'x', action: 'bounce', seconds: 5 }] },
      /operator shaping file: reactions\[0\]\.action must be "suspend", "throttle" or "blocklist"/,
    ],
    [{ default: { rate: 5 } }, /default\.rate must be null or a string "N\/s"/],
    ['rules', /operator shaping file: \(file\) must be a JSON object/],
    [{ reactions: [{ match: 'x', action: 'suspend' }] }, /reactions\[0\]\.seconds is required/],
    [
      { reactions: [{ match: '(unclosed', action: 'suspend', seconds: 5 }] },
      /operator file: reactions\[0\]\.match: invalid regular expression/,
    ],
    [
      { reactions: [{ match: 'x', action: 'suspend', seconds: 5, site: 'nosuch' }] },
      /reactions\[0\]\.site: no site named "nosuch"/,
    ],
    [{ sites: { x: { mx: ['mx.*.bad!'] } } }, /sites\.x\.mx: invalid MX pattern/],
    [{ sites: { x: { mx: ['*'] } } }, /sites\.x\.mx: invalid MX pattern "\*": needs at least one literal label/],
    [{ sites: { 'a,b': { mx: ['*.a.example'] } } }, /sites\.a,b: invalid site name/],
    [{ warmup: { schedule: [] } }, /warmup\.schedule/],
    [{ colour: 'blue' }, /unknown field colour/],
  ];
  for (const [file, err] of cases) {
    it(`refuses ${JSON.stringify(file)}`, () => expect(() => loadShaping(BUILT_IN, file)).to.throw(ShapingError, err));
  }

  it('requires a complete built-in file', () => {
    const f = clone();
    delete f.warmup;
    expect(() => loadShaping(f)).to.throw(ShapingError, /built-in shaping file: warmup is required/);
  });
});
