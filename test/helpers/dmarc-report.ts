// DMARC aggregate reports as a provider mails them (gzipped XML as the body, RFC 7489 appendix C), for tests that
// send them to the inbound listener at dmarc@<bounce domain>.
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import type { TestDns } from './dns.js';

export interface Row {
  ip: string;
  count: number;
  dkim?: 'pass' | 'fail';
  spf?: 'pass' | 'fail';
  disp?: string;
}

/** A gzipped aggregate report about `domain` as a provider mails it; the reporter's address is `email`. */
export function aggregateReport(
  org: string,
  id: string,
  domain: string,
  beginMs: number,
  rows: Row[],
  email = `r@${org}`,
): string {
  const b = Math.floor(beginMs / 1000);
  const recs = rows
    .map(
      (r) =>
        `<record><row><source_ip>${r.ip}</source_ip><count>${r.count}</count><policy_evaluated><disposition>${r.disp ?? 'none'}</disposition><dkim>${r.dkim ?? 'pass'}</dkim><spf>${r.spf ?? 'pass'}</spf></policy_evaluated></row><identifiers><header_from>${domain}</header_from></identifiers><auth_results><spf><domain>${domain}</domain><result>pass</result></spf></auth_results></record>`,
    )
    .join('');
  const xml = `<?xml version="1.0"?><feedback><report_metadata><org_name>${org}</org_name><email>${email}</email><report_id>${id}</report_id><date_range><begin>${b}</begin><end>${b + 86399}</end></date_range></report_metadata><policy_published><domain>${domain}</domain><p>reject</p></policy_published>${recs}</feedback>`;
  return `From: r@reports.example\r\nTo: dmarc@bounces.mta.test\r\nSubject: Report Domain: ${domain} Submitter: ${org} Report-ID: ${id}\r\nContent-Type: application/gzip\r\nContent-Transfer-Encoding: base64\r\n\r\n${zlib.gzipSync(xml).toString('base64')}\r\n`;
}

/** A reporter's DKIM key (selector `s1`), its public half published on the loopback DNS at s1._domainkey.<domain>. */
export function reporterKey(dns: TestDns, domain: string): { domain: string; privateKey: string } {
  const keys = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pub = keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  dns.set(`s1._domainkey.${domain}`, { TXT: [`v=DKIM1; k=rsa; p=${pub}`] });
  return { domain, privateKey: keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() };
}

/** `raw` with a DKIM-Signature by `key` prepended (relaxed/relaxed, From covered). */
export async function signedBy(key: { domain: string; privateKey: string }, raw: string): Promise<string> {
  // signTime given: without it mailauth reads the clock twice (t= of the header signed and of the header written,
  // each Math.round(Date.now() / 1000)), and a signature made across a half second does not verify (session 21).
  const { signatures } = await dkimSign(raw, {
    signTime: new Date(),
    signatureData: [{ signingDomain: key.domain, selector: 's1', privateKey: key.privateKey }],
  });
  return signatures + raw;
}
