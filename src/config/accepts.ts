// What each setting accepts, in words, for the message that refuses a bad value (operations.md: "a setting with a
// bad value stops the start, naming the variable and what it accepts"). Pure: read from the schema where it says
// enough (enumerations, ranges), written out where a pattern would not.
import net from 'node:net';
import { ConfigSchema, ENV, type Config } from './schema.js';

const HOST = 'an IP address or a host name';
const WORDS: Partial<Record<keyof Config, string>> = {
  dataDir: 'a folder this user can create and write',
  databaseUrl: 'a postgres:// or postgresql:// URL',
  httpHost: HOST,
  smtpHost: HOST,
  submissionHost: HOST,
  publicUrl: 'an http:// or https:// URL',
  docsUrl: 'an http:// or https:// URL',
  hostname: 'a host name (letters, digits, dots, dashes), fully qualified in production',
  bounceDomain: 'a domain name (letters, digits, dots, dashes)',
  dnsServers: 'IP addresses, each with an optional :port, comma-separated',
  sendingIps: 'IPv4 or IPv6 addresses this host holds, comma-separated',
  fblSources: 'domains or addresses (user@domain), comma-separated',
  metricsToken: 'a token of at least 16 characters',
  adminToken: 'a token of at least 16 characters',
  dnsCheckCron: 'a cron expression (5 fields, or 6 with seconds first)',
  ipCheckCron: 'a cron expression (5 fields, or 6 with seconds first)',
  tlsrptCron: 'a cron expression (5 fields, or 6 with seconds first)',
  tlsrptFrom: 'an email address (local@domain)',
  dnsblZones: 'DNS zone names, comma-separated',
  alertWebhookUrl: 'an http:// or https:// URL',
  alertWebhookSecret: 'a Standard Webhooks secret: whsec_ and base64 (at least 16 characters)',
  ipPools: 'team=ip|ip;team=ip (file: {"team": ["ip", …]})',
};

interface Node {
  type?: string;
  anyOf?: { const?: unknown }[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  items?: Node;
}

function fromSchema(s: Node): string | null {
  if (s.anyOf?.every((x) => x.const !== undefined)) return `one of ${s.anyOf.map((x) => String(x.const)).join(', ')}`;
  if (s.type === 'boolean') return '1 or 0 (true/false, yes/no)';
  if (s.type === 'integer' || s.type === 'number') {
    const what = s.type === 'integer' ? 'an integer' : 'a number';
    if (s.minimum !== undefined && s.maximum !== undefined) return `${what} from ${s.minimum} to ${s.maximum}`;
    if (s.minimum !== undefined) return `${what} of at least ${s.minimum}`;
    if (s.exclusiveMinimum !== undefined) return `${what} above ${s.exclusiveMinimum}`;
    return what;
  }
  if (s.type === 'string' && s.minLength) return 'a non-empty string';
  return null;
}

/** What `key` accepts, in words (null: the schema's own message says it). */
export function accepts(key: string): string | null {
  const words = WORDS[key as keyof Config];
  if (words) return words;
  const s = (ConfigSchema.properties as Record<string, Node | undefined>)[key];
  return s ? fromSchema(s) : null;
}

/** The MTA_* variable of a setting, if it has one. */
export const envNameOf = (key: string): string | undefined => Object.entries(ENV).find(([, [k]]) => k === key)?.[0];

/** A listener's address: an IP address, or a host name (a dotted quad must be a real IPv4 address). */
export const isListenHost = (h: string): boolean =>
  net.isIP(h) !== 0 || (!/^[\d.]+$/.test(h) && /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9-]+)*\.?$/.test(h));
