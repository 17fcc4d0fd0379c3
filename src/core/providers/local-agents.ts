// Local delivery agents in the provider registry: the error texts of dovecot, mail.local, procmail, maildrop,
// vpopmail and vmailmgr (go-sisimai lda/lib.go, BSD-2-Clause) → reason. Pure data and one lookup.
import type { BounceReason } from '../bounce-reasons.js';
import type { Phrases } from './types.js';

/** An agent: the lower-case signs that it wrote the text, and its phrases (first match wins). */
interface LocalAgent {
  name: string;
  signs: readonly string[];
  phrases: Phrases;
}

export const LOCAL_AGENTS: readonly LocalAgent[] = [
  {
    // dovecot/src/deliver/deliver.c: "Your message to <%t> was automatically rejected:%n%r"
    name: 'dovecot',
    signs: ['your message to <', '> was automatically rejected:'],
    phrases: [
      ['mailboxfull', ['not enough disk space', 'quota exceeded']],
      ['userunknown', ["mailbox doesn't exist: "]],
    ],
  },
  {
    name: 'mail.local',
    signs: ['mail.local: '],
    phrases: [
      ['mailboxfull', ['disc quota exceeded', 'mailbox full or quota exceeded']],
      ['systemerror', ['temporary file write error']],
      ['userunknown', [': invalid mailbox path', ': unknown user:', ': user missing home directory', ': user unknown']],
    ],
  },
  {
    name: 'procmail',
    signs: ['procmail: ', '/procmail '],
    phrases: [
      ['mailboxfull', ['quota exceeded while writing', 'user over quota']],
      ['systemerror', ['service unavailable']],
      ['systemfull', ['no space left to finish writing']],
    ],
  },
  {
    name: 'maildrop',
    signs: ['maildrop: '],
    phrases: [
      ['mailboxfull', ['maildir over quota.']],
      ['userunknown', ['cannot find system user', 'invalid user specified.']],
    ],
  },
  {
    name: 'vpopmail',
    signs: ['vdelivermail: '],
    phrases: [
      ['filtered', ['user does not exist, but will deliver to ']],
      ['mailboxfull', ['domain is over quota', 'user is over quota']],
      ['suspend', ['account is locked email bounced']],
      ['userunknown', ['sorry, no mailbox here by that name.']],
    ],
  },
  {
    name: 'vmailmgr',
    signs: ['vdeliver: '],
    phrases: [
      ['mailboxfull', ['delivery failed due to system quota violation']],
      [
        'userunknown',
        [
          'invalid or unknown base user or domain',
          'invalid or unknown virtual user',
          'user name does not refer to a virtual user',
        ],
      ],
    ],
  },
];

/**
 * The reason a local delivery agent's error text gives (its phrases; mailererror when only its sign is there), or
 * null when no agent wrote it or the failure was at an SMTP command other than DATA (go-sisimai lda.Find).
 */
export function localAgentReason(text: string, command?: string | null): BounceReason | null {
  if (!text || (command && command.toUpperCase() !== 'DATA')) return null;
  const lower = text.toLowerCase();
  const agent = LOCAL_AGENTS.find((a) => a.signs.some((s) => lower.includes(s)));
  if (!agent) return null;
  return agent.phrases.find(([, ps]) => ps.some((p) => lower.includes(p)))?.[0] ?? 'mailererror';
}
