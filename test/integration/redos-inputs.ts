// Pathological inbound messages (security audit finding 1 and relatives): each once held the event loop
// for seconds to minutes with a regex that backtracked. Shared by the unit and integration tests.

const B = 'REDOS-B1';

/** A multipart/report DSN; `notice` is its human-readable part, `returned` the returned message's headers. */
export function dsn(to: string, o: { notice?: string; returned?: string; dsnExtra?: string }): string {
  return [
    'From: MAILER-DAEMON@mx.remote.test (Mail Delivery System)',
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${B}"`,
    '',
    `--${B}`,
    'Content-Type: text/plain',
    '',
    o.notice ?? 'The message could not be delivered.',
    '',
    `--${B}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.remote.test',
    o.dsnExtra ?? '',
    '',
    'Final-Recipient: rfc822; someone@dest.test',
    'Action: failed',
    'Status: 5.1.1',
    '',
    `--${B}`,
    'Content-Type: message/rfc822',
    '',
    o.returned ?? 'From: a@b.test',
    'Subject: hi',
    '',
    'body',
    '',
    `--${B}--`,
    '',
  ].join('\r\n');
}

/** A plain-text notice (no DSN part): the generic readers scan all of its text. */
export function notice(to: string, body: string, headers: string[] = []): string {
  return ['From: MAILER-DAEMON@mx.remote.test', `To: ${to}`, 'Subject: failure notice', ...headers, '', body].join(
    '\r\n',
  );
}

function nested(to: string, depth: number): string {
  let m = 'x';
  for (let i = 0; i < depth; i++)
    m = `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n${m}\r\n--n${i}--\r\n`;
  return `From: MAILER-DAEMON@mx.remote.test\r\nTo: ${to}\r\nSubject: failure notice\r\n${m}`;
}

/** name → message, all addressed to `to`. */
export function pathologicalInputs(to: string): Record<string, string> {
  const addrs = Array.from({ length: 150 }, (_, i) => `u${i}@dest.test`);
  return {
    'Return-Path of 3,000 @ and a <': dsn(to, { returned: `Return-Path: ${'@'.repeat(3000)}<\r\nFrom: a@b.test` }),
    '40 KB of blank lines': notice(to, '\r\n'.repeat(20_000) + 'x'),
    '240 KB of blank lines': notice(to, '\r\n'.repeat(120_000) + 'x'),
    '240 KB of blank lines in a DSN notice': dsn(to, { notice: '\r\n'.repeat(120_000) }),
    '200 KB of spaces and tabs on lines': notice(to, ' \t \r\n'.repeat(40_000) + 'x'),
    'a 100 KB line of spaces': notice(to, ' '.repeat(100_000) + 'x'),
    '200 KB of @': notice(to, '@'.repeat(200_000)),
    '200 KB of < in HTML': notice(to, '<'.repeat(200_000), ['Content-Type: text/html']),
    'From of mailer-daemon@ x 10,000': notice(to, 'x', [`Reply-To: ${'mailer-daemon@'.repeat(10_000)}`]).replace(
      'From: MAILER-DAEMON@mx.remote.test',
      `From: ${'mailer-daemon@'.repeat(10_000)}`,
    ),
    'Original-Mail-From of 100,000 a@': dsn(to, { dsnExtra: `Original-Mail-From: <${'a@'.repeat(100_000)}` }),
    'a 200 KB DSN field value of spaces': dsn(to, { dsnExtra: `X-Thing:${' '.repeat(200_000)}\u2028` }),
    '5,000 recipient lines': notice(
      to,
      Array.from({ length: 5000 }, (_, i) => `<u${i}@dest.test>: 550 no such user`).join('\r\n'),
    ),
    '150 recipients, each on 200 long lines': notice(
      to,
      addrs.map((a) => `<${a}>: 550`).join('\r\n') + '\r\n' + Array(200).fill(addrs.join(' ')).join('\r\n'),
    ),
    'MIME nested 60 deep': nested(to, 60),
    'Exim recipient line of a@ x 30,000': notice(to, `  ${'a@'.repeat(30_000)}<`),
  };
}
