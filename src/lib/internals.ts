// The only place that reads private fields of nodemailer's SMTPConnection and smtp-server's SMTPServer
// (checked against nodemailer 10.6 and smtp-server 3.21 by test/integration/lib-internals.test.ts; re-run it on any upgrade).
import type { Socket } from 'node:net';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SMTPServer } from 'smtp-server';

/** An SMTP reply error as nodemailer builds it (`recipient` on RCPT refusals). */
export type SmtpReplyError = Error & {
  code?: string;
  response?: string;
  responseCode?: number;
  command?: string;
  recipient?: string;
};

/** The client connection's socket (plain or TLS) once connected; null before connecting or after closing. */
export function socketOf(conn: SMTPConnection): Socket | null {
  const sock = (conn as unknown as { _socket?: Socket | false | null })._socket;
  return sock || null;
}

/**
 * The RCPT refusals of the current transaction. nodemailer drops them from the error when DATA is then
 * refused; they are still on the connection's `_envelope` until the next one starts.
 */
export function rejectedRecipientsOf(conn: SMTPConnection): SmtpReplyError[] {
  const envelope = (conn as unknown as { _envelope?: { rejectedErrors?: SmtpReplyError[] } | false })._envelope;
  return (envelope && envelope.rejectedErrors) || [];
}

/** One client connection of an SMTPServer: its peer address, and sending a reply line / closing it. */
export interface ServerConnection {
  remoteAddress?: string;
  /** the session (its user once authenticated; envelope.mailFrom set from MAIL FROM to the end of the transaction) */
  session?: { user?: unknown; envelope?: { mailFrom?: unknown } };
  /** the message being received (DATA), while it is */
  _dataStream?: unknown;
  send(code: number, text: string): void;
  close(): void;
}

/** The open client connections of an SMTPServer (its private `connections` set; a closed one leaves it at once). */
export function connectionsOf(server: SMTPServer): Set<ServerConnection> {
  return (server as unknown as { connections: Set<ServerConnection> }).connections;
}
