// One recipient's reading: the provider registry's answer (PRECEDENCE), then the generic reading (classifyBounce)
// of its status, reply code, diagnostic and command, into the report's recipient entry. Pure.
import type { BounceReason } from '../core/bounce-reasons.js';
import { classifyBounce, findReply, findStatus } from '../core/classify.js';
import { mailboxProvider, registryAnswer } from '../core/providers/index.js';
import type { RawRecipient } from './dsn.js';
import type { Action, ReportRecipient } from '../core/report.js';

/**
 * What the provider registry decides for this recipient (its PRECEDENCE: the notice's own reason, the remote host's
 * table, provider codes, vendor phrases), or null; the generic reading (classifyBounce) does the rest.
 */
function presetReason(r: RawRecipient, diagnostic: string | null): { reason: BounceReason; source: string } | null {
  // codes are read from the text as given, phrases from the unfolded reply (unfoldReply)
  const text = diagnostic ?? '';
  const status = r.status && !r.status.endsWith('.0.0') ? r.status : (findStatus(text) ?? r.status);
  const said = withoutPostfixHost(text);
  return registryAnswer({
    text: unfoldReply(r.replies ? `${r.replies} ${said}` : said),
    status,
    replycode: r.replycode ?? findReply(text, status?.[0]),
    command: r.command,
    rhost: r.rhost ?? (said === text ? remoteHost(r, text) : null),
    destination: r.address?.split('@')[1] ?? null,
    lhost: r.lhost ?? null,
    notice: (r.reason as BounceReason | null | undefined) ?? null,
    lead: r.lead ?? null,
    decoder: r.decoder ?? 'generic',
  });
}

/** The text without Postfix's "host NAME[ADDR] said:" (Sisimai's Postfix decoder takes no remote host from it). */
function withoutPostfixHost(text: string): string {
  return text.replace(/\bhost\s+[\w.-]+\[[\w.:]*\]\s+said:/gi, 'said:');
}

/** The host that returned the reply: Remote-MTA, else the "host X [addr]" of the notice's text. */
function remoteHost(r: RawRecipient, text: string): string | null {
  return r.rhost ?? /\bhost\s+([\w-]+(?:\.[\w-]+)+)\s*\[/i.exec(text)?.[1] ?? null;
}

/**
 * A multi-line reply read as one text (go-sisimai): "550-5.2.1 a rate that 550-5.2.1 prevents" loses its repeated
 * "550-5.2.1" / "550 5.2.1" / "550-" prefixes, and starts with "550 5.2.1" again when the code is still in it.
 */
export function unfoldReply(text: string): string {
  const cs = findStatus(text);
  const cr = findReply(text, cs?.[0]);
  if (!cr || !text.includes(`${cr}-`)) return text;
  let out = text;
  for (const q of ['-', ' ']) {
    if (cs) out = out.split(`${cr}${q}${cs}`).join('');
    out = out.split(`${cr}${q}`).join('');
  }
  if (out.includes(cr)) out = `${cr} ${cs ?? ''} ${out}`;
  return out.replace(/\s+/g, ' ').trim();
}
export function toRecipient(r: RawRecipient): ReportRecipient {
  const diagnostic = r.diagnostic ? r.diagnostic.replace(/\s+/g, ' ').trim() : null;
  const preset = presetReason(r, diagnostic);
  const reading = classifyBounce({
    status: r.status,
    replycode: r.replycode,
    diagnostic,
    // Sisimai::Fact reads a multi-line reply's phrases without its repeated "550-5.7.1" prefixes
    phrases: diagnostic ? unfoldReply(diagnostic) : null,
    command: r.command,
    action: r.action,
    spec: r.spec,
    reason: preset?.reason ?? null,
    // Sisimai::Fact keeps the remote host's table's answer as it is, a retry-class one too (Rhost->find || Reason->get)
    final: preset?.source === 'remote-host',
    context: r.leadForAgents ? null : r.lead,
  });
  // An explicit Action field wins: a Postfix expiry (Action: failed, Status: 4.4.7) is a final failure, not a delay.
  const action: Action =
    (r.action as Action) ?? (reading.reason === 'expired' ? 'delayed' : reading.status ? 'failed' : null);
  return {
    address: r.address,
    status: reading.status,
    action,
    reason: reading.reason,
    hard: reading.hard,
    diagnostic,
    replycode: reading.replycode,
    feedback_type: null,
    provider: mailboxProvider({
      rhost: remoteHost(r, diagnostic ?? ''),
      lhost: r.lhost,
      destination: r.address?.split('@')[1],
      text: diagnostic,
    }),
    ...(r.original && r.original !== r.address ? { original_recipient: r.original } : {}),
  };
}
