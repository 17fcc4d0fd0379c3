// A generic RFC 3464 notice (no vendor's marks: Sisimai's RFC 3464 decoder reads it) with the given per-recipient
// fields, for the parser's unit tests that check one field's reading.
export function genericDsn(fields: string[]): Buffer {
  return Buffer.from(
    [
      'From: Mail Delivery Subsystem <MAILER-DAEMON@relay.example.org>',
      'To: <list-owner@example.org>',
      'Subject: Delivery report',
      'Date: Tue, 3 Mar 2026 09:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'Delivery problems, see the report below.',
      '',
      '--b',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; relay.example.org',
      '',
      ...fields,
      '',
      '--b--',
      '',
    ].join('\n'),
  );
}
