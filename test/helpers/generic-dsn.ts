// Notices built for the parser's unit tests, and how they read.
import { parseReport } from '../../src/inbound/parse.js';

/**
 * A generic RFC 3464 notice (no vendor's marks: Sisimai's RFC 3464 decoder reads it) with the given per-recipient
 * fields, for the tests that check one field's reading.
 */
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

/** A multipart/report DSN with its human-readable text and its delivery-status part's per-recipient fields. */
export function reportDsn(o: { from: string; subject: string; text: string[]; fields: string[] }): string[] {
  return [
    `From: ${o.from}`,
    'To: ann@example.org',
    'Date: Tue, 3 Mar 2026 10:00:00 +0000',
    `Subject: ${o.subject}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b10"',
    '',
    '--b10',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    ...o.text,
    '',
    '--b10',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.example.org',
    '',
    ...o.fields,
    '',
    '--b10',
    'Content-Type: text/rfc822-headers',
    '',
    'From: ann@example.org',
    'To: tom@example.net',
    'Subject: hello',
    '',
    '--b10--',
    '',
  ];
}

/** A raw notice's recipients as [address, reason, hard]. */
export const readRecipients = async (raw: string[]) =>
  ((await parseReport(Buffer.from(raw.join('\n')))).recipients ?? []).map((r) => [r.address, r.reason, r.hard]);
