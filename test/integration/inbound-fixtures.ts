// Helpers for the inbound listener tests: a real SMTP client (nodemailer's SMTPConnection) playing
// the remote MTA, raw EHLO probing, and builders for RFC 3464 DSNs and RFC 5965 ARF reports.
import net from 'node:net';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { TestService } from '../helpers/service.js';

export function smtpPort(s: TestService): number {
  const a = s.svc.components.find((c) => c.name === 'inbound-smtp')?.address?.();
  const m = a ? /:(\d+)$/.exec(a) : null;
  if (!m) throw new Error(`no inbound listener address (${a})`);
  return Number(m[1]);
}

export interface SendResult {
  ok: boolean;
  code: number | null;
  response: string;
  accepted: string[];
  rejected: string[];
}

/** One SMTP transaction over loopback (STARTTLS when offered, self-signed accepted). Never throws on SMTP errors. */
export function smtpSend(
  port: number,
  env: { from: string; to: string[]; size?: number },
  raw: string | Buffer,
): Promise<SendResult> {
  return new Promise((resolve, reject) => {
    const conn = new SMTPConnection({
      host: '127.0.0.1',
      port,
      name: 'mx.remote.test',
      tls: { rejectUnauthorized: false },
      connectionTimeout: 5000,
      socketTimeout: 10_000,
    });
    conn.on('error', () => {
      /* reported through callbacks */
    });
    conn.connect((err) => {
      if (err) {
        conn.close();
        return reject(err);
      }
      conn.send({ from: env.from, to: env.to, size: env.size }, raw, (err2, info) => {
        conn.quit();
        if (err2)
          return resolve({
            ok: false,
            code: err2.responseCode ?? null,
            response: err2.response ?? err2.message,
            accepted: [],
            rejected: env.to,
          });
        resolve({
          ok: true,
          code: Number(info.response.slice(0, 3)),
          response: info.response,
          accepted: info.accepted,
          rejected: info.rejected,
        });
      });
    });
  });
}

/** The greeting and EHLO reply lines, read from a plain socket. */
export function ehlo(port: number): Promise<{ banner: string; lines: string[] }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = '';
    let banner = '';
    sock.setTimeout(5000, () => {
      sock.destroy();
      reject(new Error('timeout'));
    });
    sock.on('error', reject);
    sock.on('data', (d) => {
      buf += d.toString();
      if (!banner && buf.includes('\r\n')) {
        banner = buf.split('\r\n')[0];
        buf = '';
        sock.write('EHLO mx.remote.test\r\n');
        return;
      }
      if (banner && /^250 .*\r\n$/m.test(buf)) {
        sock.end('QUIT\r\n');
        resolve({ banner, lines: buf.trim().split('\r\n') });
      }
    });
  });
}

/** Sends SMTP commands one at a time over a plain socket; returns the last line of each reply. */
export function dialogue(port: number, commands: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const replies: string[] = [];
    const queue = [...commands];
    let buf = '';
    sock.setTimeout(5000, () => {
      sock.destroy();
      reject(new Error(`timeout after ${replies.join(' | ')}`));
    });
    sock.on('error', reject);
    sock.on('data', (d) => {
      buf += d.toString();
      const m = /(?:^|\r\n)(\d{3}) [^\r\n]*\r\n$/.exec(buf);
      if (!m) return;
      replies.push(buf.trim().split('\r\n').pop()!);
      buf = '';
      const next = queue.shift();
      if (next === undefined) {
        sock.end();
        resolve(replies.slice(1));
      } else sock.write(next + '\r\n');
    });
  });
}

let seq = 0;
const msgId = () => `<report.${Date.now()}.${++seq}@mx.remote.test>`;

export interface DsnOptions {
  to: string;
  recipient: string;
  action?: string;
  status?: string;
  diagnostic?: string;
  originalMessageId?: string;
  originalReturnPath?: string;
  originalMailFrom?: string;
  messageId?: string;
  /** An Original-Recipient field (the address before an alias rewrote it to `recipient`). */
  originalRecipient?: string;
  /** Body of the returned message. */
  body?: string;
}

/** A multipart/report DSN as Postfix writes one (RFC 3464). */
export function buildDsn(o: DsnOptions): string {
  const b = 'DSN-BOUNDARY-1';
  const status = o.status ?? '5.1.1';
  return [
    'From: MAILER-DAEMON@mx.remote.test (Mail Delivery System)',
    `To: ${o.to}`,
    'Subject: Undelivered Mail Returned to Sender',
    `Message-ID: ${o.messageId ?? msgId()}`,
    'Date: Thu, 17 Jul 2025 23:34:45 +0000',
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    "I'm sorry to inform you that the message below could not be delivered.",
    '',
    `<${o.recipient}>: host mx.remote.test said: ${o.diagnostic ?? '550 5.1.1 user unknown'}`,
    '',
    `--${b}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.remote.test',
    ...(o.originalMailFrom ? [`Original-Mail-From: rfc822; ${o.originalMailFrom}`] : []),
    '',
    ...(o.originalRecipient ? [`Original-Recipient: rfc822; ${o.originalRecipient}`] : []),
    `Final-Recipient: rfc822; ${o.recipient}`,
    `Action: ${o.action ?? 'failed'}`,
    `Status: ${status}`,
    'Remote-MTA: dns; mx.remote.test',
    `Diagnostic-Code: smtp; ${o.diagnostic ?? '550 5.1.1 user unknown'}`,
    '',
    `--${b}`,
    'Content-Type: message/rfc822',
    '',
    ...(o.originalReturnPath ? [`Return-Path: <${o.originalReturnPath}>`] : []),
    'From: sender@example.com',
    `To: ${o.recipient}`,
    'Subject: hello',
    ...(o.originalMessageId ? [`Message-ID: ${o.originalMessageId}`] : []),
    '',
    o.body ?? 'body',
    '',
    `--${b}--`,
    '',
  ].join('\r\n');
}

/** An RFC 5965 abuse report naming the original Message-ID and recipient. */
export function buildArf(o: {
  to: string;
  recipient: string;
  originalMessageId: string;
  messageId?: string;
  from?: string;
  originalReturnPath?: string;
  /** the feedback-report's Original-Mail-From (RFC 5965 §3.2) */
  originalMailFrom?: string;
}): string {
  const b = 'ARF-BOUNDARY-1';
  return [
    `From: ${o.from ?? 'fbl@provider.test'}`,
    `To: ${o.to}`,
    'Subject: Email Feedback Report',
    `Message-ID: ${o.messageId ?? msgId()}`,
    'Date: Thu, 17 Jul 2025 23:34:45 +0000',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${b}"`,
    '',
    `--${b}`,
    'Content-Type: text/plain',
    '',
    'This is an email abuse report.',
    '',
    `--${b}`,
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: ProviderFBL/1.0',
    'Version: 1',
    ...(o.originalMailFrom ? [`Original-Mail-From: <${o.originalMailFrom}>`] : []),
    `Original-Rcpt-To: ${o.recipient}`,
    '',
    `--${b}`,
    'Content-Type: message/rfc822',
    '',
    ...(o.originalReturnPath ? [`Return-Path: <${o.originalReturnPath}>`] : []),
    'From: sender@example.com',
    `To: ${o.recipient}`,
    'Subject: hello',
    `Message-ID: ${o.originalMessageId}`,
    '',
    'body',
    '',
    `--${b}--`,
    '',
  ].join('\r\n');
}
