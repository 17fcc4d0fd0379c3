// DMARC aggregate reports as a provider mails them (gzipped XML as the body, RFC 7489 appendix C), for tests that
// send them to the inbound listener at dmarc@<bounce domain>.
import zlib from 'node:zlib';

export interface Row {
  ip: string;
  count: number;
  dkim?: 'pass' | 'fail';
  spf?: 'pass' | 'fail';
  disp?: string;
}

/** A gzipped aggregate report about `domain` as a provider mails it. */
export function aggregateReport(org: string, id: string, domain: string, beginMs: number, rows: Row[]): string {
  const b = Math.floor(beginMs / 1000);
  const recs = rows
    .map(
      (r) =>
        `<record><row><source_ip>${r.ip}</source_ip><count>${r.count}</count><policy_evaluated><disposition>${r.disp ?? 'none'}</disposition><dkim>${r.dkim ?? 'pass'}</dkim><spf>${r.spf ?? 'pass'}</spf></policy_evaluated></row><identifiers><header_from>${domain}</header_from></identifiers><auth_results><spf><domain>${domain}</domain><result>pass</result></spf></auth_results></record>`,
    )
    .join('');
  const xml = `<?xml version="1.0"?><feedback><report_metadata><org_name>${org}</org_name><email>r@${org}</email><report_id>${id}</report_id><date_range><begin>${b}</begin><end>${b + 86399}</end></date_range></report_metadata><policy_published><domain>${domain}</domain><p>reject</p></policy_published>${recs}</feedback>`;
  return `From: r@reports.example\r\nTo: dmarc@bounces.mta.test\r\nSubject: Report Domain: ${domain} Submitter: ${org} Report-ID: ${id}\r\nContent-Type: application/gzip\r\nContent-Transfer-Encoding: base64\r\n\r\n${zlib.gzipSync(xml).toString('base64')}\r\n`;
}
