// Google (Gmail, Google Workspace) in the provider registry: its reply table, read when the remote host is
// Google's (Sisimai Rhost::Google, BSD-2-Clause), and the Gmail notice format (Sisimai Lhost::Gmail). Pure data.
import type { BounceReason } from '../bounce-reasons.js';
import type { NoticeFormat, Provider, ProviderInput } from './types.js';

type R = BounceReason;
/** Google: [reply codes, status codes, phrase]; reply and status compared without their class digit, as Sisimai does. */
const GOOGLE: readonly [string, string, string, R][] = [
  ['451', '4.7.24', 'the spf record of the sending domain', 'authfailure'], ['550', '5.7.24', 'the spf record of the sending domain', 'authfailure'],
  ['421', '4.7.26', 'senders to authenticate with either spf or dkim', 'authfailure'], ['550', '5.7.26', 'senders to authenticate with either spf or dkim', 'authfailure'],
  ['550', '5.7.26', 'fails to pass spf checks for an spf record with a hard fail', 'authfailure'],
  ['550', '5.7.26', 'has an spf record with a hard fail policy', 'authfailure'],
  ['451', '4.7.26', "is not accepted due to domain's dmarc policy", 'authfailure'], ['550', '5.7.26', "is not accepted due to domain's dmarc policy", 'authfailure'],
  ['550', '5.7.1', 'fails to pass authentication checks', 'authfailure'], ['550', '5.7.26', 'fails to pass authentication checks', 'authfailure'],
  ['421', '4.7.27', 'senders to authenticate with spf', 'authfailure'], ['421', '4.7.27', 'senders to authenticate their email with spf', 'authfailure'],
  ['550', '5.7.27', 'senders to authenticate with spf', 'authfailure'], ['421', '4.7.30', 'senders to authenticate their email with dkim', 'authfailure'],
  ['550', '5.7.30', 'senders to authenticate with dkim', 'authfailure'], ['421', '4.7.32', 'aligned with either the authenticated spf or dkim', 'authfailure'],
  ['421', '4.7.0', 'very low reputation of the sending ip address', 'badreputation'], ['421', '4.7.0', 'very low reputation of the sending domain', 'badreputation'],
  ['550', '5.7.1', 'due to the very low reputation of the sending ip address', 'badreputation'],
  ['550', '5.7.1', 'due to the very low reputation of the sending domain', 'badreputation'],
  ['421', '4.7.0', 'ip not in whitelist for rcpt domain', 'blocked'], ['421', '4.7.0', 'try again later, closing connection.', 'blocked'],
  ['501', '5.5.4', 'empty helo/ehlo argument not allowed', 'blocked'], ['501', '5.5.4', 'helo/ehlo argument is invalid', 'blocked'],
  ['421', '4.7.0', 'an unusual rate of unsolicited mail', 'blocked'], ['421', '4.7.28', 'an unusual rate of mail', 'blocked'],
  ['550', '5.7.1', 'an unusual rate of unsolicited mail', 'blocked'], ['550', '5.7.28', 'an unusual rate of unsolicited mail', 'blocked'],
  ['552', '5.2.3', "exceeded google's message size limits", 'exceedlimit'], ['552', '5.3.4', "exceeds google's limit of limit attachments.", 'exceedlimit'],
  ['552', '5.3.4', "your message exceeded google's message header size limits", 'exceedlimit'],
  ['552', '5.3.4', 'bytes per individual header size', 'exceedlimit'], ['552', '5.3.4', "exceeds google's header name limit of", 'exceedlimit'],
  ['552', '5.3.4', "exceeds google's message header size limit", 'exceedlimit'],
  ['421', '4.7.0', 'connection expired', 'expired'], ['451', '4.4.2', 'timeout - closing connection', 'expired'],
  // failedstarttls in Sisimai 5.2+; securityerror before
  ['530', '5.7.0', 'must issue a starttls command first', 'securityerror'], ['454', '5.5.1', 'starttls may not be repeated', 'securityerror'],
  ['421', '4.7.0', 'tls required for rcpt domain', 'securityerror'], ['421', '4.7.29', 'senders to use tls/ssl for smtp', 'securityerror'],
  ['550', '5.7.29', 'senders to use tls/ssl for smtp', 'securityerror'],
  ['452', '4.2.2', 'inbox is out of storage space', 'mailboxfull'], ['552', '5.2.2', 'inbox is out of storage space and inactive', 'mailboxfull'],
  ['452', '4.2.2', 'is over quota', 'mailboxfull'], ['552', '5.2.2', 'is over quota', 'mailboxfull'], ['550', '5.7.1', 'email quota exceeded', 'mailboxfull'],
  ['552', '5.3.4', "exceeded google's message size limits", 'mesgtoobig'], ['552', '5.3.4', "exceeds google's message size limit of", 'mesgtoobig'],
  ['554', '5.4.6', 'message exceeded 50 hops', 'networkerror'], ['554', '5.6.0', 'message exceeded 50 hops', 'networkerror'],
  ['550', '5.7.0', 'mail relay denied', 'norelaying'], ['550', '5.7.1', 'invalid credentials for relay', 'norelaying'],
  ['550', '5.7.1', 'is not authorized to send email directly to our servers', 'norelaying'],
  ['550', '5.7.1', 'missing a valid address in the from: header', 'notcompliantrfc'],
  ['550', '5.7.1', 'multiple addresses in from: header are not accepted', 'notcompliantrfc'],
  ['550', '5.7.1', 'is not rfc 5322 compliant', 'notcompliantrfc'], ['550', '5.7.1', 'missing a valid message-id: header', 'notcompliantrfc'],
  ['550', '5.7.1', 'contains a unicode character in a disallowed header', 'notcompliantrfc'],
  ['550', '5.7.1', 'encoded-word syntax is not permitted', 'notcompliantrfc'], ['553', '5.1.7', 'is not a valid rfc 5321 address', 'notcompliantrfc'],
  ['554', '5.6.0', 'mail message is malformed', 'notcompliantrfc'],
  ['552', '5.7.0', 'illegal attachment on your message', 'policyviolation'],
  ['552', '5.7.0', 'blocked because its content presents a potential security issue', 'policyviolation'],
  ['550', '5.7.1', 'you are sending to (or from) has a policy that prohibited', 'policyviolation'],
  ['421', '4.7.28', 'sending messages with the same message-id:', 'policyviolation'],
  ['550', '5.7.0', 'mail sending denied', 'rejected'], ['550', '5.7.1', 'unauthenticated email is not accepted', 'rejected'],
  ['421', '4.7.0', 'does not have a ptr record', 'requireptr'], ['421', '4.7.23', ' have a ptr record, or the ptr record', 'requireptr'],
  ['550', '5.7.1', 'does not meet ipv6 sending guidelines regarding ptr records and authentication', 'requireptr'],
  ['550', '5.7.25', 'does not have a ptr record', 'requireptr'], ['550', '5.7.25', 'does not match the ip address of the hostname', 'requireptr'],
  ['454', '4.7.0', 'too many login attempts', 'securityerror'], ['501', '5.5.2', 'cannot decode response', 'securityerror'],
  ['503', '5.7.0', 'no identity changes permitted', 'securityerror'], ['530', '5.5.1', 'authentication required.', 'securityerror'],
  ['530', '5.7.0', 'authentication required.', 'securityerror'], ['535', '5.7.1', 'application-specific password required', 'securityerror'],
  ['535', '5.7.9', 'application-specific password required', 'securityerror'], ['535', '5.7.1', 'please log in with your web browser', 'securityerror'],
  ['534', '5.7.9', 'please log in with your web browser', 'securityerror'], ['534', '5.7.14', 'please log in through your web browser', 'securityerror'],
  ['535', '5.7.1', 'username and password not accepted', 'securityerror'], ['535', '5.7.8', 'username and password not accepted', 'securityerror'],
  ['421', '4.7.0', 'due to the nature of the content or the links within', 'spamdetected'], ['550', '5.7.1', 'likely unsolicited mail', 'spamdetected'],
  ['450', '4.2.1', 'is receiving mail too quickly', 'speeding'], ['450', '4.2.1', 'peak smtp relay limit exceeded for customer', 'speeding'],
  ['450', '4.2.1', 'rate that prevents additional messages from being delivered', 'speeding'],
  ['550', '5.2.1', 'rate that prevents additional messages from being delivered', 'speeding'],
  ['550', '5.4.5', 'daily sending quota exceeded', 'speeding'], ['550', '5.4.5', 'daily user sending limit exceeded', 'speeding'],
  ['550', '5.4.5', 'daily smtp relay limit exceeded for', 'speeding'], ['550', '5.7.1', 'daily smtp relay limit exceeded for', 'speeding'],
  ['550', '5.7.1', 'daily smtp relay sending limit exceeded for', 'speeding'], ['550', '5.7.1', 'this mail has been rate limited', 'speeding'],
  ['550', '5.2.1', 'account that you tried to reach is disabled', 'suspend'], ['550', '5.2.1', 'account that you tried to reach is inactive', 'suspend'],
  ['451', '4.5.0', 'smtp protocol violation', 'syntaxerror'], ['454', '4.5.0', 'smtp protocol violation', 'syntaxerror'],
  ['525', '5.7.10', 'smtp protocol violation', 'syntaxerror'], ['535', '5.5.4', 'optional argument not permitted', 'syntaxerror'],
  ['501', '5.7.11', 'syntax error', 'syntaxerror'], ['501', '5.5.2', 'syntax error', 'syntaxerror'], ['555', '5.5.2', 'syntax error', 'syntaxerror'],
  ['502', '5.5.1', 'too many unrecognized commands, goodbye', 'syntaxerror'], ['502', '5.5.1', 'unimplemented command', 'syntaxerror'],
  ['502', '5.5.1', 'unrecognized command', 'syntaxerror'], ['503', '5.5.1', 'bad sequence of commands', 'syntaxerror'],
  ['503', '5.5.1', 'ehlo/helo first', 'syntaxerror'], ['503', '5.5.1', 'mail first', 'syntaxerror'], ['503', '5.5.1', 'rcpt first', 'syntaxerror'],
  ['503', '5.5.1', 'no data after bdat', 'syntaxerror'], ['504', '5.7.4', 'unrecognized authentication type', 'syntaxerror'],
  ['504', '5.7.4', 'xoauth is no longer supported', 'syntaxerror'], ['554', '5.7.0', 'too many unauthenticated commands', 'syntaxerror'],
  ['421', '4.3.0', 'temporary system problem', 'systemerror'], ['421', '4.7.0', 'temporary system problem', 'systemerror'],
  ['421', '4.4.5', 'server busy', 'systemerror'], ['451', '4.3.0', 'multiple destination domains per transaction is unsupported', 'systemerror'],
  ['451', '4.3.0', 'mail server has temporarily rejected this message', 'systemerror'],
  ['451', '4.3.0', 'mail server temporarily rejected message', 'systemerror'],
  ['452', '4.5.3', 'domain policy size per transaction exceeded', 'systemerror'],
  ['454', '4.7.0', 'cannot authenticate due to temporary system problem', 'systemerror'],
  ['452', '4.5.3', 'your message has too many recipients', 'toomanyconn'], ['550', '5.5.3', 'too many recipients for this sender', 'toomanyconn'],
  ['550', '5.1.1', 'the email account that you tried to reach does not exist', 'userunknown'],
  ['553', '5.1.2', "we weren't able to find the recipient domain", 'userunknown'],
  ['553', '5.1.3', 'is not a valid rfc 5321 address', 'userunknown'],
];

function googleReason(i: ProviderInput, text: string): R | null {
  if (!i.replycode || !i.status) return null;
  const reply = i.replycode.slice(1, 3);
  const status = i.status.slice(2);
  const hit = GOOGLE.find(([rc, st, p]) => text.includes(p) && rc.indexOf(reply) > 0 && st.indexOf(status) > 1);
  return hit ? hit[3] : null;
}

const GMAIL: NoticeFormat = { family: 'Gmail', need: 2, detect: { from: /<?mailer-daemon@googlemail\.com>?/i, subject: /Delivery Status Notification/ },
  reasons: [
    { reason: 'expired', phrases: ['DNS Error: Could not contact DNS servers',
      'Delivery to the following recipient has been delayed', 'The recipient server did not accept our requests to connect'] },
    { reason: 'hostunknown', phrases: ['DNS Error: Domain name not found', 'DNS Error: DNS server returned answer with no data'] },
  ] };

export const GOOGLE_PROVIDER: Provider = {
  name: 'Google', hosts: ['aspmx.l.google.com', 'gmail-smtp-in.l.google.com'],
  byHost: (i) => googleReason(i, i.text.toLowerCase()), notices: [GMAIL],
};
