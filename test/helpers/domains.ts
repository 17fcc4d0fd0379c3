// Test helpers for sending domains: publish a Domain record's DNS records in TestDns, wait for the
// scheduled re-check to reach a status, and make a live send from an address.
import type { TestDns } from './dns.js';
import type { TestService } from './service.js';

interface DomainRecord {
  purpose: string;
  type: string;
  name: string;
  value: string;
}

/** Publishes one record of a Domain API object: a TXT value (added once) or the return-path MX. */
export function publishRecord(dns: TestDns, r: DomainRecord): void {
  const cur = dns.zone.get(r.name) ?? {};
  if (r.type === 'TXT') {
    const txt = cur.TXT ?? [];
    if (!txt.includes(r.value)) dns.set(r.name, { ...cur, TXT: [...txt, r.value] });
  } else if (r.type === 'MX') {
    const [prio, host] = r.value.split(' ');
    dns.set(r.name, { ...cur, MX: [{ priority: Number(prio), exchange: host }] });
  }
}

/** Publishes every record of a Domain API object (or those of the given purposes). */
export function publish(dns: TestDns, domain: { records: DomainRecord[] }, only?: string[]): void {
  for (const r of domain.records) if (!only || only.includes(r.purpose)) publishRecord(dns, r);
}

/** Polls GET /v1/domains/{id} until it has the status (the cron job runs every second in tests). */
export async function waitFor(s: TestService, key: string, id: string, status: string, ms = 8000): Promise<any> {
  const until = Date.now() + ms;
  let last: any;
  while (Date.now() < until) {
    last = (await s.api('GET', `/v1/domains/${id}`, { key })).body;
    if (last.status === status) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`domain ${id} did not become ${status}: ${JSON.stringify(last)}`);
}

export function liveSend(s: TestService, key: string, from: string) {
  return s.api('POST', '/v1/emails', {
    key,
    body: { from, to: 'someone@receiver.test', subject: 'hi', text: 'hello' },
  });
}
