// A DNS server on 127.0.0.1 (UDP and TCP, same port) answering from a mutable zone table,
// so tests can publish, change and remove MX/TXT/A/AAAA/CNAME/TLSA records, or make a name stall. A name marked `ad`
// is answered with the AD bit set, as a validating resolver does for a DNSSEC-secure answer (DANE's tests).
import dns2 from 'dns2';

const { Packet } = dns2 as unknown as { Packet: any };

export interface MxRecord {
  exchange: string;
  priority: number;
}
export interface Records {
  MX?: MxRecord[];
  A?: string[];
  AAAA?: string[];
  TXT?: (string | string[])[];
  CNAME?: string;
  /** TLSA records (RFC 6698): usage, selector, matching type, certificate association data. */
  TLSA?: TlsaRecord[];
  /** Answer with the AD bit (a validating resolver's "secure"); also for NODATA when the name has no such record. */
  ad?: boolean;
  /** Reverse names, published at the address's in-addr.arpa / ip6.arpa name (TestDns.reverseName). */
  PTR?: string[];
  /** Never answer queries for this name (the client times out). */
  stall?: boolean;
  /** Answer queries for this name this much later (ms). */
  delayMs?: number;
  /** Over UDP, answer truncated (TC bit, no records): the client must ask again over TCP. */
  truncate?: boolean;
  /** Answer SERVFAIL. */
  servfail?: boolean;
  /** TTL of this name's records (s; default 60). */
  ttl?: number;
}

export interface TlsaRecord {
  usage: number;
  selector: number;
  matching: number;
  data: Buffer;
}
const TLSA = 52;

export class TestDns {
  readonly zone = new Map<string, Records>();
  port = 0;
  queries: { name: string; type: string; via: 'udp' | 'tcp' }[] = [];
  private udp: any;
  private tcp: any;

  set(name: string, records: Records): this {
    this.zone.set(name.toLowerCase().replace(/\.$/, ''), records);
    return this;
  }
  patch(name: string, records: Partial<Records>): this {
    return this.set(name, { ...(this.zone.get(name.toLowerCase()) ?? {}), ...records });
  }
  delete(name: string): this {
    this.zone.delete(name.toLowerCase());
    return this;
  }

  /** The name a PTR record of an IPv4 or IPv6 address lives at (10.2.0.192.in-addr.arpa). */
  static reverseName(ip: string): string {
    if (!ip.includes(':')) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
    const [head, tail = ''] = ip.toLowerCase().split('::');
    const groups = (s: string) => (s ? s.split(':') : []);
    const h = groups(head);
    const t = groups(tail);
    const all = [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
    const nibbles = all.map((g) => g.padStart(4, '0')).join('');
    return `${[...nibbles].reverse().join('.')}.ip6.arpa`;
  }

  /** `ip:port` for MTA_DNS_SERVERS. */
  get server(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const handle = (req: any, send: (r: any) => void) => this.answer(req, send, 'tcp');
    this.udp = (dns2 as any).createUDPServer((req: any, send: (r: any) => void) => this.answer(req, send, 'udp'));
    await this.udp.listen(0, '127.0.0.1');
    this.port = this.udp.address().port;
    try {
      this.tcp = (dns2 as any).createTCPServer(handle);
      await new Promise<void>((resolve, reject) => {
        this.tcp.once('error', reject);
        this.tcp.listen(this.port, '127.0.0.1', () => resolve());
      });
    } catch {
      this.tcp = null;
    }
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => this.udp.close(() => r()));
    if (this.tcp) await new Promise<void>((r) => this.tcp.close(() => r()));
  }

  private answer(req: any, send: (r: any) => void, via: 'udp' | 'tcp', delayed = false): void {
    const res = Packet.createResponseFromRequest(req);
    const q = req.questions[0];
    const name = String(q.name).toLowerCase().replace(/\.$/, '');
    const type =
      q.type === TLSA ? 'TLSA' : (Object.keys(Packet.TYPE).find((k) => Packet.TYPE[k] === q.type) ?? String(q.type));
    if (!delayed) this.queries.push({ name, type, via });
    let rec = this.zone.get(name);
    if (rec?.stall) return;
    if (rec?.delayMs && !delayed) {
      setTimeout(() => this.answer(req, send, via, true), rec.delayMs);
      return;
    }
    if (rec?.ad) res.header.ad = 1;
    if (rec?.truncate && via === 'udp') {
      res.header.tc = 1;
      send(res);
      return;
    }
    if (rec?.servfail) {
      res.header.rcode = Packet.RCODE.SERVFAIL;
      send(res);
      return;
    }
    if (!rec) {
      res.header.rcode = Packet.RCODE.NXDOMAIN;
      send(res);
      return;
    }
    let owner = name;
    for (let hops = 0; rec?.CNAME && type !== 'CNAME' && hops < 8; hops++) {
      res.answers.push({ name: owner, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 60, domain: rec.CNAME });
      owner = rec.CNAME.toLowerCase();
      rec = this.zone.get(owner);
    }
    const add = (t: string, data: Record<string, unknown>) =>
      res.answers.push({ name: owner, type: Packet.TYPE[t], class: Packet.CLASS.IN, ttl: rec?.ttl ?? 60, ...data });
    if (rec && type === 'MX')
      for (const mx of rec.MX ?? []) add('MX', { exchange: mx.exchange, priority: mx.priority });
    if (rec && type === 'A') for (const a of rec.A ?? []) add('A', { address: a });
    if (rec && type === 'AAAA') for (const a of rec.AAAA ?? []) add('AAAA', { address: a });
    if (rec && type === 'TXT') for (const t of rec.TXT ?? []) add('TXT', { data: Array.isArray(t) ? t : splitTxt(t) });
    if (rec && type === 'CNAME' && rec.CNAME) add('CNAME', { domain: rec.CNAME });
    if (rec && type === 'PTR') for (const p of rec.PTR ?? []) add('PTR', { domain: p });
    // dns2 has no TLSA encoder: it writes `data` as the raw RDATA.
    for (const t of type === 'TLSA' ? (rec?.TLSA ?? []) : [])
      res.answers.push({
        name: owner,
        type: TLSA,
        class: Packet.CLASS.IN,
        ttl: rec?.ttl ?? 60,
        data: Buffer.concat([Buffer.from([t.usage, t.selector, t.matching]), t.data]),
      });
    send(res);
  }
}

/** Long TXT values are published as several 255-byte strings, as real zones do. */
function splitTxt(s: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += 255) out.push(s.slice(i, i + 255));
  return out.length ? out : [''];
}
