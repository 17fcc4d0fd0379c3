// Parity with Sisimai on its whole labelled public sample set (test/fixtures/sisimai, BSD-2-Clause): the share of
// samples read exactly like Sisimai (kind, recipients found, hard/soft, reason) must not fall below FLOOR.
import { expect } from 'chai';
import { FIGURES, HELD_OUT_DIR, measure, share, tally, type SampleResult } from '../../scripts/corpus.js';

/** The overall "all four" figure reached (rounded down to a tenth); raise it when the reader improves, never lower it. */
const FLOOR = 100;

describe('parseReport: parity with Sisimai on its public corpus', function () {
  this.timeout(60_000);
  let results: SampleResult[] = [];
  before(async () => {
    results = await measure();
  });

  it('reads all of the labelled samples', () => {
    expect(results.length).to.be.at.least(706);
  });

  it(`agrees with Sisimai on at least ${FLOOR}% of samples on every figure`, () => {
    const t = tally(results);
    const misses = results.filter((r) => !FIGURES.every((f) => r.agrees[f])).map((r) => `${r.file}: ${r.got}`);
    expect(share(t, 'all'), misses.join('\n')).to.be.at.least(FLOOR);
    for (const f of FIGURES) expect(share(t, f), f).to.be.at.least(FLOOR);
  });
});

describe('parseReport: held-out real bounces (outside Sisimai’s corpus, test/fixtures/held-out)', function () {
  this.timeout(60_000);
  /** The first two sets (PHP-Bounce-Handler, BounceParser): issue 37's bar, reached. */
  const HELD_OUT_FLOOR = 97;
  const FIRST_SETS = ['php-bounce-handler/', 'bounceparser/'];
  /**
   * The third round (bounce_email, MailBounceDetector, mikel/mail), measured before this round's rules (recipients
   * 97.8%, hard/soft 97.8%, reason 89.1%; BENCHMARKS.md, "Bounce reading") and at the bar since.
   */
  const THIRD_SETS = ['bounce-email/', 'mailbouncedetector/', 'ruby-mail/'];
  /**
   * The first three rounds, with the sets added after the rules were written (flufl.bounce, flanker, the third round): per
   * figure, the share reached (rounded down); raise it when the reader improves, never lower it. Issue 37's bar (97%)
   * is reached on every figure since the tenth round's rules (BENCHMARKS.md, "Bounce reading").
   */
  const WHOLE_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 98.2,
    hard: 98.8,
    reason: 98.5,
  };
  /**
   * The fourth round (Mailman 2.1, zoonru/PHP-Bounce-Handler, MimeKit, Exim's test suite), measured before any rule
   * was changed for it (BENCHMARKS.md, "Bounce reading"): per figure, the share reached (rounded down); raise it when
   * the reader improves, never lower it.
   */
  const FOURTH_SETS = ['mailman2/', 'zoon-bounce-handler/', 'mimekit/', 'exim-testsuite/'];
  const FOURTH_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 95.3,
    hard: 100,
    reason: 97.6,
  };
  /**
   * The fifth round (node-baunsu, Stalwart's DSN and ARF samples, CwsMailBounceHandler, MediaWiki's BounceHandler,
   * mail_manager, the Python bounce_email port, CiviCRM, CPython, Chatwoot), measured before any rule was changed for
   * it (BENCHMARKS.md, "Bounce reading"): per figure, the share reached (rounded down); raise it, never lower it.
   */
  const FIFTH_SETS = [
    'node-baunsu/',
    'stalwart/',
    'cws-bounce-handler/',
    'mediawiki-bouncehandler/',
    'mail-manager/',
    'bounce-email-py/',
    'civicrm/',
    'cpython/',
    'chatwoot/',
  ];
  const FIFTH_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 100,
    hard: 100,
    reason: 97.5,
  };
  /**
   * The sixth round (Dada Mail, Majordomo 2, RIPE NCC's whois, froide, Freegle, Discourse, Zammad, php-imap, the
   * Python bounced library), measured before any rule was changed for it (BENCHMARKS.md, "Bounce reading"): per
   * figure, the share reached (rounded down); raise it, never lower it.
   */
  const SIXTH_SETS = [
    'dada-mail/',
    'majordomo2/',
    'ripe-whois/',
    'froide/',
    'iznik-server/',
    'discourse/',
    'zammad/',
    'php-imap/',
    'bounced-py/',
  ];
  const SIXTH_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 100,
    hard: 100,
    reason: 100,
  };
  /**
   * The seventh round (Alaveteli, hitobito, and Crisp's email-bounce-parser: Postfix notice texts stored under a fixed
   * Postfix header, test/fixtures/held-out/SOURCES.md), measured before any rule was changed for it, and go-gmime's
   * three, measured after (BENCHMARKS.md, "Bounce reading"): per figure, the share reached (rounded down); raise it,
   * never lower it.
   */
  const SEVENTH_SETS = ['alaveteli/', 'hitobito/', 'crisp-bounce-parser/', 'go-gmime/'];
  const SEVENTH_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 100,
    hard: 99,
    reason: 99,
  };
  /**
   * The eighth round (KumoMTA's, listmonk's, nodemailer/mailparser's and schleuder's whole notices), measured before
   * any rule was changed for it (kind, recipients, hard/soft 100%, reason 85.7%; BENCHMARKS.md, "Bounce reading"):
   * per figure, the share reached (rounded down); raise it, never lower it.
   */
  const EIGHTH_SETS = ['kumomta/', 'listmonk/', 'mailparser/', 'schleuder/'];
  const EIGHTH_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 100,
    hard: 100,
    reason: 100,
  };
  /**
   * The ninth round (fml8's regression bounces, Zimbra's, Request Tracker's, Postal's, Zammad's and bounceHammer's
   * whole notices), measured before any rule was changed for it (kind 100%, recipients 86.7%, hard/soft 80.0%, reason
   * 73.3%; BENCHMARKS.md, "Bounce reading"), then its rules: per figure, the share reached (rounded down); raise it,
   * never lower it.
   */
  const NINTH_SETS = ['fml8/', 'zimbra/', 'request-tracker/', 'postal/', 'zammad2/', 'bouncehammer/'];
  const NINTH_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 93.3,
    hard: 96.6,
    reason: 90,
  };
  /** The held-out notices of rounds 1-8 (586): the share reached (rounded down); raise it, never lower it. */
  const EVERY_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 98.6,
    hard: 99.1,
    reason: 98.6,
  };
  /** Every held-out notice of every round (616): the share reached (rounded down); raise it, never lower it. */
  const ROUNDS_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 98.3,
    hard: 99,
    reason: 98.2,
  };
  /** The held-out notices of rounds 1-6: issue 37's bar (97%) on every figure, and the share reached (rounded down). */
  const ALL_FLOOR: Record<(typeof FIGURES)[number], number> = {
    kind: 100,
    recipients: 98.2,
    hard: 99.1,
    reason: 98.4,
  };
  const LATER_SETS = [...FOURTH_SETS, ...FIFTH_SETS, ...SIXTH_SETS, ...SEVENTH_SETS, ...EIGHTH_SETS, ...NINTH_SETS];
  let results: SampleResult[] = [];
  before(async () => {
    results = await measure(HELD_OUT_DIR);
  });
  const missList = (rs: SampleResult[]) =>
    rs.filter((r) => !FIGURES.every((f) => r.agrees[f])).map((r) => `${r.file}: ${r.got}`);

  it(`reads at least ${HELD_OUT_FLOOR}% of the first two sets like Sisimai's rules on every figure`, () => {
    const first = results.filter((r) => FIRST_SETS.some((p) => r.file.startsWith(p)));
    const t = tally(first);
    expect(first.length).to.be.at.least(186);
    for (const f of FIGURES) expect(share(t, f), `${f}\n${missList(first).join('\n')}`).to.be.at.least(HELD_OUT_FLOOR);
  });

  it(`reads at least ${HELD_OUT_FLOOR}% of the third round like Sisimai's rules on every figure`, () => {
    const third = results.filter((r) => THIRD_SETS.some((p) => r.file.startsWith(p)));
    const t = tally(third);
    expect(third.length).to.be.at.least(46);
    for (const f of FIGURES) expect(share(t, f), `${f}\n${missList(third).join('\n')}`).to.be.at.least(HELD_OUT_FLOOR);
  });

  it('reads the first three rounds at least as well as it did (per figure)', () => {
    const earlier = results.filter((r) => !LATER_SETS.some((p) => r.file.startsWith(p)));
    const t = tally(earlier);
    expect(earlier.length).to.be.at.least(337);
    for (const f of FIGURES)
      expect(share(t, f), `${f}\n${missList(earlier).join('\n')}`).to.be.at.least(WHOLE_FLOOR[f]);
  });

  // Each later round against its own floor (measured before its rules, then raised), with its size at least.
  const ROUNDS = [
    { name: 'fourth', sets: FOURTH_SETS, floor: FOURTH_FLOOR, size: 43 },
    { name: 'fifth', sets: FIFTH_SETS, floor: FIFTH_FLOOR, size: 41 },
    { name: 'sixth', sets: SIXTH_SETS, floor: SIXTH_FLOOR, size: 44 },
    { name: 'seventh', sets: SEVENTH_SETS, floor: SEVENTH_FLOOR, size: 107 },
    { name: 'eighth', sets: EIGHTH_SETS, floor: EIGHTH_FLOOR, size: 14 },
    { name: 'ninth', sets: NINTH_SETS, floor: NINTH_FLOOR, size: 30 },
  ];
  for (const round of ROUNDS)
    it(`reads the ${round.name} round at least as well as it did (per figure)`, () => {
      const these = results.filter((r) => round.sets.some((p) => r.file.startsWith(p)));
      const t = tally(these);
      expect(these.length).to.be.at.least(round.size);
      for (const f of FIGURES)
        expect(share(t, f), `${f}\n${missList(these).join('\n')}`).to.be.at.least(round.floor[f]);
    });

  it('reads the whole held-out set at least as well as it did (per figure)', () => {
    const t = tally(results);
    expect(results.length).to.be.at.least(616);
    for (const f of FIGURES)
      expect(share(t, f), `${f}\n${missList(results).join('\n')}`).to.be.at.least(ROUNDS_FLOOR[f]);
  });

  it('reads rounds 1-8 at least as well as they did (per figure)', () => {
    const upToEighth = results.filter((r) => !NINTH_SETS.some((p) => r.file.startsWith(p)));
    const t = tally(upToEighth);
    expect(upToEighth.length).to.be.at.least(586);
    for (const f of FIGURES)
      expect(share(t, f), `${f}\n${missList(upToEighth).join('\n')}`).to.be.at.least(EVERY_FLOOR[f]);
  });

  it('reads rounds 1-6 at least as well as they did (per figure)', () => {
    const upToSixth = results.filter(
      (r) => ![...SEVENTH_SETS, ...EIGHTH_SETS, ...NINTH_SETS].some((p) => r.file.startsWith(p)),
    );
    const t = tally(upToSixth);
    expect(upToSixth.length).to.be.at.least(465);
    for (const f of FIGURES)
      expect(share(t, f), `${f}\n${missList(upToSixth).join('\n')}`).to.be.at.least(ALL_FLOOR[f]);
  });
});
