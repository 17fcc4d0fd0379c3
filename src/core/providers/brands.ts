// Which mailbox provider answered a bounce (`provider`: google, microsoft, yahoo, apple, ...): per provider the host
// names of its MX/MTA hosts, its mailbox domains and signs in its reply text. Data; the lookup is in index.ts.

/** One mailbox provider as users know it; `registry` names the registry entries whose host tables are its too. */
export interface MailboxProvider {
  provider: string;
  registry?: readonly string[];
  /** host-name suffixes (".example.com") or exact names of its mail hosts */
  hosts?: readonly string[];
  /** mailbox domains it hosts (the recipient's domain) */
  domains?: readonly string[];
  /** a sign in its reply text that only it writes (its help URL, its own code) */
  signs?: RegExp;
}

export const MAILBOX_PROVIDERS: readonly MailboxProvider[] = [
  {
    provider: 'google',
    registry: ['Google'],
    hosts: ['.google.com', '.googlemail.com', '.gmail.com'],
    domains: ['gmail.com', 'googlemail.com'],
    signs: /\bgsmtp\b|support\.google\.com\/(?:mail|a)\b/i,
  },
  {
    provider: 'microsoft',
    registry: ['Microsoft', 'Outlook'],
    hosts: ['.outlook.com', '.hotmail.com', '.live.com', '.msn.com'],
    domains: ['outlook.com', 'hotmail.com', 'live.com', 'msn.com', 'hotmail.co.uk', 'hotmail.fr', 'live.fr'],
    signs: /\.protection\.outlook\.com\b|\.prod\.outlook\.com\b|\bS3150\b|\bOU-00\d\b/i,
  },
  {
    provider: 'yahoo',
    hosts: ['.yahoodns.net', '.yahoo.com', '.yahoo.net'],
    domains: ['yahoo.com', 'ymail.com', 'rocketmail.com', 'yahoo.co.uk', 'yahoo.fr', 'yahoo.de'],
    signs: /\[TSS?\d\d\]|\bsenders\.yahooinc\.com\b|\bpostmaster\.yahooinc\.com\b|\bhelp\.yahoo\.com\b/i,
  },
  { provider: 'aol', registry: ['Aol'], hosts: ['.aol.com'], domains: ['aol.com', 'aim.com'] },
  {
    provider: 'apple',
    registry: ['Apple'],
    domains: ['icloud.com', 'me.com', 'mac.com'],
    signs: /\bsupport\.apple\.com\b/i,
  },
  { provider: 'facebook', registry: ['Facebook'], signs: /\bpostmaster\.facebook\.com\b/i },
  { provider: 'messagelabs', registry: ['MessageLabs'] },
  { provider: 'mimecast', registry: ['Mimecast'], signs: /\bmimecast\.com\b/i },
  { provider: 'kddi', registry: ['KDDI'], domains: ['ezweb.ne.jp', 'au.com'] },
  { provider: 'nttdocomo', registry: ['NTTDOCOMO'], hosts: ['.docomo.ne.jp'], domains: ['docomo.ne.jp'] },
  { provider: 'yandex', hosts: ['.yandex.net', '.yandex.ru'], domains: ['yandex.ru', 'yandex.com', 'ya.ru'] },
  { provider: 'mailru', hosts: ['.mail.ru'], domains: ['mail.ru', 'bk.ru', 'inbox.ru', 'list.ru'] },
  { provider: 'gmx', hosts: ['.gmx.net', '.gmx.com'], domains: ['gmx.net', 'gmx.de', 'gmx.com'] },
  { provider: 'zoho', hosts: ['.zoho.com', '.zohomail.com'], domains: ['zoho.com', 'zohomail.com'] },
  { provider: 'tencent', hosts: ['.qq.com'], domains: ['qq.com', 'foxmail.com'] },
  { provider: 'orange', hosts: ['.orange.fr', '.wanadoo.fr'], domains: ['orange.fr', 'wanadoo.fr'] },
];
