// SMTP replies of the submission listener: each API error a submission can meet, as a reply code and an
// enhanced status code (docs/submission.md lists them). Pure mapping.
import { ApiError, type ErrorCode } from '../core/errors.js';

export type SmtpReply = Error & { responseCode: number };

export function smtpError(code: number, message: string): SmtpReply {
  return Object.assign(new Error(message), { responseCode: code });
}

const REPLIES: Partial<Record<ErrorCode, [number, string]>> = {
  missing_api_key: [535, '5.7.8'],
  invalid_api_key: [535, '5.7.8'],
  missing_scope: [535, '5.7.8'],
  domain_not_verified: [550, '5.7.1'],
  all_recipients_suppressed: [550, '5.7.1'],
  insufficient_credits: [451, '4.7.0'],
  request_too_large: [552, '5.3.4'],
  rate_limited: [451, '4.7.1'],
  invalid_address: [550, '5.7.1'], // a From or Sender that could show one address and be another
  header_not_allowed: [550, '5.7.1'],
  invalid_parameter: [550, '5.6.0'],
  store_unavailable: [451, '4.3.0'],
};

/** The reply for an error met while authenticating or storing a message; anything unexpected is 451 4.3.0. */
export function replyFor(err: unknown): SmtpReply {
  if (!(err instanceof ApiError)) return smtpError(451, '4.3.0 Temporary failure, try again later');
  const [code, status] = REPLIES[err.code] ?? [550, '5.6.0'];
  const text =
    err.code === 'invalid_api_key' || err.code === 'missing_api_key'
      ? 'Authentication credentials invalid'
      : err.message;
  return smtpError(code, `${status} ${text}`);
}
