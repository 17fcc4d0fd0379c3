// Remote-host tables as data (Sisimai Rhost::Google, Microsoft, Apple, Aol, KDDI, NTTDOCOMO, Mimecast, MessageLabs,
// Outlook; BSD-2-Clause): applied only when the remote MTA or the recipient's domain belongs to the provider. Pure.
import type { BounceReason } from './bounce-reasons.js';

/** What a provider table reads: lower-case-insensitive text, the status and reply code, and where it came from. */
export interface ProviderInput {
  text: string; status: string | null; replycode: string | null; command?: string | null;
  /** Remote-MTA (or the "host X said" name) and the recipient's domain */
  rhost?: string | null; destination?: string | null;
}

/** Provider → host name fragments (Sisimai Rhost::RhostClass). */
export const PROVIDER_HOSTS: Readonly<Record<string, readonly string[]>> = {
  Aol: ['.mail.aol.com', '.mx.aol.com'],
  Apple: ['.mail.icloud.com', '.apple.com', '.me.com'],
  Google: ['aspmx.l.google.com', 'gmail-smtp-in.l.google.com'],
  KDDI: ['.ezweb.ne.jp', 'msmx.au.com'],
  MessageLabs: ['.messagelabs.com'],
  Microsoft: ['.prod.outlook.com', '.protection.outlook.com', '.onmicrosoft.com', '.exchangelabs.com'],
  Mimecast: ['.mimecast.com'],
  NTTDOCOMO: ['mfsmax.docomo.ne.jp'],
  Outlook: ['.hotmail.com'],
};

/** The provider whose hosts the remote host names, else whose hosts end with the recipient's domain. */
export function providerOf(rhost: string | null | undefined, destination: string | null | undefined): string | null {
  const host = (rhost ?? '').toLowerCase();
  const dest = (destination ?? '').toLowerCase();
  const names = Object.keys(PROVIDER_HOSTS);
  if (host) for (const n of names) if (PROVIDER_HOSTS[n]?.some((h) => host.endsWith(h) || host === h.replace(/^\./, ''))) return n;
  if (dest) for (const n of names) if (PROVIDER_HOSTS[n]?.some((h) => h.endsWith(`.${dest}`) || h === dest)) return n;
  return null;
}

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

/** Microsoft: [status (or "5.7." with a range of the third number), low, high, phrase, reason]. */
const MICROSOFT: readonly [string, number, number, string, R][] = [
  ['4.7.26', 0, 0, 'must pass either spf or dkim validation, this message is not signed', 'authfailure'],
  ['5.7.23', 0, 0, 'the message was rejected because of sender policy framework violation', 'authfailure'],
  ['5.7.509', 0, 0, 'does not pass dmarc verification', 'authfailure'],
  ['5.7.515', 0, 0, "doesn't meet the required authentication level", 'authfailure'],
  ['4.7.650', 0, 0, 'has been temporarily rate limited due to ip reputation', 'badreputation'],
  ['4.4.2', 0, 0, 'connection dropped', 'blocked'], ['4.7.', 850, 899, 'access denied, please try again later', 'blocked'],
  ['5.7.25', 0, 0, 'must have a reverse dns record', 'blocked'], ['5.7.506', 0, 0, 'access denied, bad helo', 'blocked'],
  ['5.7.507', 0, 0, 'access denied, rejected by recipient', 'blocked'], ['5.7.510', 0, 0, 'does not accept email over ipv6', 'blocked'],
  ['5.7.511', 0, 0, 'access denied, banned sender', 'blocked'], ['5.7.513', 0, 0, 'using customer block list', 'blocked'],
  ['5.7.', 606, 649, 'access denied, banned sending ip ', 'blocked'], ['4.7.', 500, 699, 'access denied, please try again later', 'blocked'],
  ['5.5.4', 0, 0, 'invalid domain name', 'blocked'], ['5.7.1', 0, 0, 'part of their network is on our block list (s3150)', 'blocked'],
  ['5.3.0', 0, 0, 'too many related errors', 'contenterror'], ['5.6.11', 0, 0, 'invalid characters', 'contenterror'],
  ['5.4.11', 0, 0, 'agent generated message depth exceeded', 'contenterror'], ['5.5.6', 0, 0, 'invalid message content', 'contenterror'],
  ['5.2.3', 0, 0, 'resolver.rst.recipsizelimit; message too large for this recipient', 'mesgtoobig'],
  ['5.3.4', 0, 0, 'message size exceeds fixed maximum message size', 'mesgtoobig'], ['5.3.4', 0, 0, 'message too big for system', 'mesgtoobig'],
  ['4.4.1', 0, 0, 'connection timed out', 'expired'], ['4.4.7', 0, 0, 'message delayed', 'expired'],
  ['4.4.7', 0, 0, 'queue expired; message expired', 'expired'], ['4.4.7', 0, 0, 'message expired', 'expired'],
  ['5.4.300', 0, 0, 'message expired', 'expired'], ['5.4.316', 0, 0, 'message expired', 'expired'],
  // failedstarttls in Sisimai 5.2+; securityerror before
  ['4.4.8', 0, 0, ' failed mta-sts validation', 'securityerror'], ['5.4.8', 0, 0, ' failed mta-sts validation', 'securityerror'],
  ['4.4.317', 0, 0, 'starttls is required to send mail', 'securityerror'], ['5.4.317', 0, 0, 'starttls is required to send mail', 'securityerror'],
  ['4.7.5', 0, 0, 'remote certificate failed mta-sts validation', 'securityerror'],
  ['5.7.5', 0, 0, 'remote certificate failed mta-sts validation', 'securityerror'],
  ['5.7.51', 0, 0, 'restrictdomainstoipaddresses or restrictdomainstocertificate', 'securityerror'],
  ['4.7.321', 0, 0, 'starttls-not-supported:', 'securityerror'], ['5.7.321', 0, 0, 'starttls-not-supported:', 'securityerror'],
  ['5.7.322', 0, 0, 'certificate-expired:', 'securityerror'], ['4.7.323', 0, 0, 'tlsa-invalid:', 'securityerror'],
  ['5.7.323', 0, 0, 'tlsa-invalid:', 'securityerror'], ['4.7.324', 0, 0, 'dnssec-invalid:', 'securityerror'],
  ['5.7.324', 0, 0, 'dnssec-invalid:', 'securityerror'], ['4.7.325', 0, 0, 'certificate-host-mismatch:', 'securityerror'],
  ['5.7.325', 0, 0, 'certificate-host-mismatch:', 'securityerror'],
  ['5.2.2', 0, 0, 'mailbox full', 'mailboxfull'],
  ['5.4.4', 0, 0, 'smtpsend.dns.nonexistentdomain; nonexistent domain', 'networkerror'],
  ['5.4.6', 0, 0, 'hop count exceeded - possible mail loop', 'networkerror'], ['4.4.312', 0, 0, 'dns query failed', 'networkerror'],
  ['5.4.312', 0, 0, 'dns query failed', 'networkerror'], ['4.4.316', 0, 0, 'connection refused', 'networkerror'],
  ['5.4.316', 0, 0, 'connection refused', 'networkerror'], ['5.4.4', 0, 0, 'invalid arguments', 'networkerror'],
  ['5.4.6', 0, 0, 'routing loop detected', 'networkerror'], ['5.4.14', 0, 0, 'routing loop detected', 'networkerror'],
  ['5.7.1', 0, 0, 'unable to relay', 'norelaying'], ['5.7.1', 0, 0, 'client was not authenticated', 'norelaying'],
  ['5.4.1', 0, 0, 'relay access denied', 'norelaying'], ['5.7.64', 0, 0, 'tenantattribution; relay access denied', 'norelaying'],
  ['5.4.310', 0, 0, 'does not exist', 'norelaying'],
  ['4.3.2', 0, 0, 'system not accepting network messages', 'notaccept'],
  ['4.4.4', 0, 0, 'hosted tenant which has no mail-enabled subscriptions', 'notaccept'],
  ['5.3.2', 0, 0, 'storedrv.deliver: missing or bad storedriver mdb properties', 'notaccept'],
  ['5.0.350', 0, 0, 'x-dg-ref header is too long', 'policyviolation'],
  ['5.0.350', 0, 0, 'requested action not taken: policy violation detected (as345)', 'policyviolation'],
  ['5.7.', 900, 999, 'delivery not authorized, message refused', 'policyviolation'],
  ['5.1.7', 0, 0, 'invalid address', 'rejected'], ['5.1.7', 0, 0, 'unknown sender address', 'rejected'],
  ['5.1.0', 0, 0, 'sender denied', 'rejected'], ['5.1.8', 0, 0, 'access denied, bad outbound sender', 'rejected'],
  ['5.7.1', 0, 0, 'delivery not authorized', 'rejected'], ['5.7.12', 0, 0, 'sender was not authenticated by organization', 'rejected'],
  ['5.7.124', 0, 0, 'sender not in allowed-senders list', 'rejected'], ['5.7.133', 0, 0, 'sender not authenticated for group', 'rejected'],
  ['5.7.134', 0, 0, 'sender was not authenticated for mailbox', 'rejected'],
  ['5.7.13', 0, 0, 'sender was not authenticated for public folder', 'rejected'],
  ['5.7.135', 0, 0, 'sender was not authenticated for public folder', 'rejected'],
  ['5.7.136', 0, 0, 'sender was not authenticated', 'rejected'], ['5.7.', 501, 503, 'access denied, spam abuse detected', 'rejected'],
  ['5.7.512', 0, 0, 'access denied, message must be rfc 5322 section 3.6.2 compliant', 'rejected'],
  ['5.7.750', 0, 0, 'service unavailable. client blocked from sending from unregistered domains', 'rejected'],
  ['5.7.', 501, 503, 'access denied, banned sender', 'rejected'],
  ['5.7.3', 0, 0, 'cannot achieve exchange server authentication', 'securityerror'], ['5.7.3', 0, 0, 'not authorized', 'securityerror'],
  ['5.7.1', 0, 0, 'client was not authenticated', 'securityerror'],
  ['5.7.57', 0, 0, 'client was not authenticated to send anonymous mail during mail from', 'securityerror'],
  ['5.2.1', 0, 0, 'content filter agent quarantined this message', 'spamdetected'],
  // ratelimited in Sisimai 5.2+; toomanyconn (recipients, connections) or speeding (rates) before
  ['5.5.3', 0, 0, 'too many recipients', 'toomanyconn'], ['4.3.2', 0, 0, 'storedrv.deliver; recipient thread limit exceeded', 'toomanyconn'],
  ['4.5.3', 0, 0, 'too many recipients', 'toomanyconn'], ['4.7.652', 0, 0, 'has exceeded the maximum number of connections', 'toomanyconn'],
  ['5.1.90', 0, 0, 'reached your daily limit for message recipients', 'speeding'], ['5.2.2', 0, 0, 'submission quota exceeded', 'speeding'],
  ['5.2.121', 0, 0, "recipient's per hour message receive limit", 'speeding'],
  ['5.2.122', 0, 0, "recipient's per hour message receive limit", 'speeding'],
  ['5.2.122', 0, 0, 'the recipient has exceeded their limit for', 'speeding'],
  ['5.7.508', 0, 0, 'has exceeded permitted limits within', 'speeding'], ['5.7.', 700, 749, 'tenant has exceeded threshold', 'speeding'],
  ['5.7.', 700, 749, 'traffic not accepted from this ip', 'speeding'],
  ['5.7.504', 0, 0, 'recipient address rejected: access denied', 'suspend'], ['5.7.505', 0, 0, 'access denied, banned recipient', 'suspend'],
  ['5.2.1', 0, 0, 'mailbox cannot be accessed', 'suspend'],
  ['5.3.3', 0, 0, 'unrecognized command', 'syntaxerror'], ['5.5.2', 0, 0, 'send hello first', 'syntaxerror'],
  ['4.3.2', 0, 0, 'service not available', 'systemerror'], ['4.3.2', 0, 0, 'service not active', 'systemerror'],
  ['5.3.5', 0, 0, 'system incorrectly configured', 'systemerror'], ['5.3.190', 0, 0, 'when journaling archive is disabled', 'systemerror'],
  ['5.0.0', 0, 0, 'helo / ehlo requires domain address', 'systemerror'], ['5.1.4', 0, 0, 'destination mailbox address ambiguous', 'systemerror'],
  ['5.2.4', 0, 0, 'mailing list expansion problem', 'systemerror'], ['5.2.14', 0, 0, 'misconfigured forwarding address', 'systemerror'],
  ['4.4.', 22, 28, 'message failed to be replicated:', 'systemerror'],
  ['4.4.3', 0, 0, 'temporary server error. please try again later attr18', 'systemerror'],
  ['4.7.0', 0, 0, 'temporary server error. please try again later. prx4 nexthop:', 'systemerror'],
  ['4.4.318', 0, 0, '(suspiciousremoteservererror)', 'systemerror'], ['5.4.318', 0, 0, '(suspiciousremoteservererror)', 'systemerror'],
  ['4.7.500', 0, 0, 'server busy. please try again later from ', 'systemerror'], ['4.7.700', 0, 0, 'pfa agent busy, please try again.', 'systemerror'],
  ['4.3.1', 0, 0, 'insufficient system resources', 'systemfull'],
  ['5.1.1', 0, 0, 'resolver.adr.exrecipnotfound; not found', 'userunknown'], ['5.1.1', 0, 0, 'user unknown', 'userunknown'],
  ['5.1.3', 0, 0, 'storedrv.submit; invalid recipient address', 'userunknown'],
  ['5.1.', 4, 5, 'recipient address reserved by rfc 2606', 'userunknown'],
  ['5.1.6', 0, 0, 'recipient addresses in single label domains not accepted', 'userunknown'],
  ['5.1.1', 0, 0, 'bad destination mailbox address', 'userunknown'], ['5.1.10', 0, 0, 'recipient not found', 'userunknown'],
  ['5.4.1', 0, 0, 'recipient address rejected: access denied', 'userunknown'],
  ['5.5.0', 0, 0, 'requested action not taken: mailbox unavailable', 'userunknown'], ['5.1.2', 0, 0, 'invalid x.400 address', 'userunknown'],
  ['5.1.351', 0, 0, 'remote server returned unknown recipient or mailbox unavailable', 'userunknown'],
];
/** Outlook.com postmaster codes ("SC-001"), valid with the reply code given. */
const MICROSOFT_CODES: Readonly<Record<string, [string, R]>> = {
  'RP-001': ['421', 'badreputation'], 'RP-002': ['421', 'badreputation'], 'RP-003': ['421', 'badreputation'],
  'SC-001': ['550', 'badreputation'], 'SC-002': ['550', 'policyviolation'], 'SC-003': ['550', 'blocked'],
  'SC-004': ['550', 'blocked'], 'DY-001': ['550', 'blocked'], 'OU-001': ['550', 'blocked'], 'OU-002': ['550', 'badreputation'],
};

function microsoftReason(i: ProviderInput, text: string): R | null {
  const st = i.status;
  if (!st) return null;
  const third = Number(st.split('.')[2]);
  for (const [code, lo, hi, phrase, reason] of MICROSOFT) {
    if (lo === hi ? st !== code : !st.includes(code) || third < lo || third > hi) continue;
    if (text.includes(phrase)) return reason;
  }
  for (const [code, [reply, reason]] of Object.entries(MICROSOFT_CODES)) {
    if (i.text.includes(code) && i.replycode === reply) return reason;
  }
  return null;
}

type Phrases = readonly [R, readonly string[]][];
/** Apple iCloud, KDDI: lower-case phrases. */
const APPLE: Phrases = [
  ['authfailure', ['s dmarc policy', 'blocked for failing both spf and dkim autentication checks']],
  ['blocked', ['rejected due to having a domain present in the spamhaus', 'rejected due to listing in spamhaus',
    'blocked - see https://support.proofpoint.com/dnsbl-lookup', 'not accepting connections']],
  ['hasmoved', ['recipient no longer on server']], ['mailboxfull', ['user is over quota']], ['norelaying', ['relay access denied']],
  ['notaccept', ['host/domain does not accept mail']], ['policyviolation', ['due to local policy']],
  ['rejected', ['sender address rejected']], ['speeding', ['due to excessive volume']],
  ['userunknown', ['inactive email address', 'user does not exist', 'unknown or illegal alias']],
];
const KDDI: Phrases = [['filtered', ['550 : user unknown']], ['userunknown', ['>: user unknown']]];
/** Aol, MessageLabs, Outlook: phrases matched case-sensitively, as Sisimai does. */
const AOL: Phrases = [['hostunknown', ['Host or domain name not found']],
  ['notaccept', ['type=MX: Malformed or unexpected name server reply']]];
const OUTLOOK: Phrases = [['hostunknown', ['The mail could not be delivered to the recipient because the domain is not reachable']],
  ['userunknown', ['Requested action not taken: mailbox unavailable']]];
const MESSAGELABS: Phrases = [
  ['authfailure', ['domain authentication fail']], ['badreputation', ['Connection rejected by policy']],
  ['blocked', ['mail rejected because your IP is in the PBL', 'your IP address has been ', 'your IP address (ip-addr) has been blocked',
    'your email address (addr) has been blocked']],
  ['contenterror', ['Stray linefeeds in message']], ['securityerror', ['TLS/SSLv3 Connection required']],
  ['norelaying', [' as a relay, ']], ['notcompliantrfc', ['550 Requested action aborted [4]', 'has detected that this message is not RFC 5322']],
  ['rejected', ['sender envelope domain not allowed for sender IP address', 'your domain has been blocked',
    'your email address has been blocked', 'your envelope sender is in my badmailfrom list',
    'your email address has been blacklisted', 'your domain has been blacklisted']],
  ['securityerror', ['Please turn on SMTP Authentication in your mail client']],
  ['spamdetected', ['Message Filtered', 'filtered by Outbound scanning']],
  ['toomanyconn', ['Too many recipients received this hour', 'too many messages']],
  ['userunknown', ['No such user', 'Invalid recipient', 'mailbox is not allowed', 'Recipient mailbox is not allowed']],
];
/** Mimecast: [reply code, lower-case phrase]. */
const MIMECAST: readonly [R, string, string][] = [
  ['authfailure', '550', 'spf sender invalid - envelope rejected'], ['authfailure', '550', 'dkim sender invalid - envelope rejected'],
  ['authfailure', '550', 'dmarc sender invalid - envelope rejected'],
  ['badreputation', '451', 'internal resources are temporarily unavailable'], ['badreputation', '550', 'local ct ip reputation - (reject)'],
  ['blocked', '421', 'sender address blocked'], ['blocked', '451', 'recipient temporarily unavailable'],
  ['blocked', '451', 'ip temporarily blacklisted'], ['expired', '550', 'journal messages past the expiration'],
  ['securityerror', '553', 'this route requires encryption (tls)'], ['securityerror', '553', 'this route requires tls version 1.2 or greater'],
  ['securityerror', '553', 'this route requires high-strength ciphers'], ['securityerror', '554', 'configuration is invalid for this certificate'],
  ['mesgtoobig', '554', 'maximum email size exceeded'], ['networkerror', '451', 'the incorrect hostname used for inbounds'],
  ['networkerror', '550', 'the incorrect hostname used for inbounds'], ['networkerror', '554', 'mail loop detected'],
  ['norelaying', '451', 'open relay not allowed'], ['norelaying', '451', 'open relay is not allowed'],
  ['notaccept', '451', 'account inbounds disabled'], ['onhold', '451', 'account outbounds disabled'],
  ['onhold', '451', 'hostname is not authorized'], ['onhold', '550', 'journal message past expiration'],
  ['policyviolation', '550', 'anti-spoofing policy - inbound not allowed'],
  ['policyviolation', '550', 'rejected by header-based anti-spoofing policy'],
  ['policyviolation', '550', 'message bounced due to content examination policy'],
  ['policyviolation', '554', 'host network not allowed'], ['policyviolation', '554', 'host network, not allowed'],
  ['rejected', '550', 'administrative prohibition envelope blocked'], ['rejected', '550', 'envelope blocked - user entry'],
  ['rejected', '550', 'envelope blocked - user domain entry'],
  ['rejected', '550', 'rejected by header-based manually blocked senders - block for manual block'],
  ['rejected', '550', 'rejected by header-based blocked senders - block policy for header from'],
  ['rejected', '550', 'envelope rejected - block policy for envelope from address'],
  ['securityerror', '535', 'incorrect authentication data'], ['securityerror', '550', 'submitter failed to disabled'],
  ['securityerror', '550', 'submitter failed to authenticate'],
  ['systemerror', '451', 'unable to process connection at this time'], ['systemerror', '451', 'message ended early'],
  ['systemerror', '451', 'unable to process command'], ['systemerror', '451', 'unable to process an email at this time'],
  ['toomanyconn', '451', 'account service is temporarily unavailable'], ['toomanyconn', '452', 'too many recipients'],
  ['toomanyconn', '550', 'exceeding outbound thread limit'],
  ['userunknown', '501', 'invalid address'], ['userunknown', '503', 'user unknown'], ['userunknown', '550', 'invalid recipient'],
  ['virusdetected', '554', 'email rejected due to security policies'],
];
/** NTT docomo: phrases, then the status code and the command. */
const DOCOMO: Phrases = [['mailboxfull', ['552 too much mail data']],
  ['syntaxerror', ['503 bad sequence of commands', '504 command parameter not implemented']], ['toomanyconn', ['552 too many recipients']]];

function byPhrase(table: Phrases, text: string): R | null {
  return table.find(([, ps]) => ps.some((p) => text.includes(p)))?.[0] ?? null;
}

function docomoReason(i: ProviderInput, lower: string): R | null {
  if (i.status === '5.1.1' || i.status === '5.0.911') return 'userunknown';
  if (i.status === '5.2.0') return 'filtered';
  const byText = byPhrase(DOCOMO, lower);
  if (byText) return byText;
  if (i.status === '5.0.0') return i.command === 'RCPT' ? 'userunknown' : i.command === 'DATA' ? 'rejected' : null;
  return null;
}

/** The reason the table of the provider that returned this reply gives, if any (Sisimai Rhost). */
export function providerReason(i: ProviderInput): R | null {
  if (!i.text) return null;
  const lower = i.text.toLowerCase();
  switch (providerOf(i.rhost, i.destination)) {
    case 'Google': return googleReason(i, lower);
    case 'Microsoft': return microsoftReason(i, lower);
    case 'Apple': return byPhrase(APPLE, lower);
    case 'KDDI': return byPhrase(KDDI, lower);
    case 'Aol': return byPhrase(AOL, i.text);
    case 'Outlook': return byPhrase(OUTLOOK, i.text);
    case 'MessageLabs': return byPhrase(MESSAGELABS, i.text);
    case 'Mimecast': return MIMECAST.find(([, rc, p]) => rc === i.replycode && lower.includes(p))?.[0] ?? null;
    case 'NTTDOCOMO': return docomoReason(i, lower);
    default: return null;
  }
}
