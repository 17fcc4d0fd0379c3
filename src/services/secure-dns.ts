// A small DNS client for what Node's resolver does not say: whether an answer is DNSSEC-validated (the AD bit of a
// validating resolver). Queries go to the service's resolver (MTA_DNS_SERVERS, else the system's) with EDNS0 and
// the DO bit, over UDP (TCP when the answer is truncated); each answer is bounded in time and size. Answers are
// cached in memory for their TTL (bounded), failures are not. Used by DANE (outbound/dane.ts, RFC 7672).
import dgram from 'node:dgram';
import net from 'node:net';
import { randomInt } from 'node:crypto';
import { getServers } from 'node:dns';
import packet from 'dns-packet';
import type { Config } from '../config/schema.js';

export type RecordType = 'MX' | 'A' | 'AAAA' | 'TLSA';

/** One answer: the rcode, whether the resolver validated it (AD), the records of the type asked, their TTL (s). */
export interface SecureAnswer {
  rcode: string;
  secure: boolean;
  records: packet.Answer[];
  ttl: number;
}

export interface SecureDnsOptions {
  /** each try's time-out (ms); a query tries each server in turn, `tries` rounds */
  timeoutMs: number;
  tries?: number;
  /** bounds of the cache time of an answer (ms) */
  minTtlMs?: number;
  maxTtlMs?: number;
  /** largest answer read (bytes; UDP asks for 1232, RFC 9715) */
  maxBytes?: number;
  /** most records of the type asked kept from one answer */
  maxRecords?: number;
}

const UDP_SIZE = 1232;
/** dns-packet's decoded message (its types leave out the rcode it reads). */
type Decoded = packet.DecodedPacket & { rcode?: string };

/** `host` and `port` of an MTA_DNS_SERVERS entry or of dns.getServers() (`1.2.3.4`, `1.2.3.4:53`, `[::1]:53`, `::1`). */
export function parseServer(s: string): { host: string; port: number } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  if (v6) return { host: v6[1], port: Number(v6[2] ?? 53) };
  if (net.isIPv6(s)) return { host: s, port: 53 };
  const [host, port] = s.split(':');
  return { host, port: Number(port ?? 53) };
}

export class SecureDns {
  private servers: { host: string; port: number }[];
  private cache = new Map<string, { until: number; value: Promise<SecureAnswer> }>();
  /** queries sent (not answered from the cache) */
  sent = 0;
  constructor(
    config: Pick<Config, 'dnsServers'>,
    private o: SecureDnsOptions,
  ) {
    this.servers = (config.dnsServers.length ? config.dnsServers : getServers()).map(parseServer);
  }

  /** Whether every server is on this host (127.0.0.0/8, ::1): the only path an AD bit cannot be forged on. */
  get loopbackOnly(): boolean {
    return this.servers.every((s) => /^127\./.test(s.host) || s.host === '::1');
  }

  /** The answer, from the cache while its TTL lasts; rejects when no server answered in time. */
  cached(name: string, type: RecordType): Promise<SecureAnswer> {
    const key = `${type} ${name.toLowerCase()}`;
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.value;
    const value = this.query(name, type);
    const entry = { until: now + (this.o.minTtlMs ?? 5000), value };
    this.cache.set(key, entry);
    const drop = () => {
      if (this.cache.get(key) === entry) this.cache.delete(key);
    };
    value.then((a) => {
      // SERVFAIL and the like are not kept: the next lookup asks again.
      if (a.rcode !== 'NOERROR' && a.rcode !== 'NXDOMAIN') return drop();
      const { minTtlMs = 5000, maxTtlMs = 3_600_000 } = this.o;
      entry.until = Date.now() + Math.min(maxTtlMs, Math.max(minTtlMs, a.ttl * 1000));
    }, drop);
    if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value as string);
    return value;
  }

  /** One query, each server in turn; rejects (code ETIMEOUT) when none answered. */
  async query(name: string, type: RecordType): Promise<SecureAnswer> {
    let last: Error = new Error('no DNS server');
    for (let round = 0; round < (this.o.tries ?? 2); round++)
      for (const server of this.servers) {
        try {
          return await this.ask(server, name, type);
        } catch (err) {
          last = err as Error;
        }
      }
    throw Object.assign(new Error(`DNS ${type} ${name}: ${last.message}`), { code: 'ETIMEOUT' });
  }

  private async ask(server: { host: string; port: number }, name: string, type: RecordType): Promise<SecureAnswer> {
    this.sent++;
    const id = randomInt(0, 65536);
    const query = packet.encode({
      type: 'query',
      id,
      // RD, and AD asked for (RFC 6840 §5.7): a validating resolver then says whether the answer is secure.
      flags: packet.RECURSION_DESIRED | packet.AUTHENTIC_DATA,
      questions: [{ type, name, class: 'IN' }],
      additionals: [{ type: 'OPT', name: '.', udpPayloadSize: UDP_SIZE, flags: packet.DNSSEC_OK } as packet.Answer],
    });
    let res = decodeFor(await this.udp(server, query, id), id, name, type);
    if (res.flag_tc) res = decodeFor(await this.tcp(server, query), id, name, type);
    const records = (res.answers ?? []).filter((a) => a.type === type).slice(0, this.o.maxRecords ?? 64);
    const ttls = [...records, ...(res.authorities ?? [])].map((a) => ('ttl' in a ? (a.ttl ?? 60) : 60));
    return {
      rcode: res.rcode ?? 'NOERROR',
      secure: res.flag_ad === true,
      records,
      ttl: ttls.length ? Math.min(...ttls) : 60,
    };
  }

  private udp(server: { host: string; port: number }, query: Buffer, id: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const sock = dgram.createSocket(net.isIPv6(server.host) ? 'udp6' : 'udp4');
      const done = (err: Error | null, buf?: Buffer) => {
        clearTimeout(timer);
        sock.close();
        if (err) reject(err);
        else resolve(buf!);
      };
      const timer = setTimeout(
        () => done(new Error(`no answer from ${server.host} in ${this.o.timeoutMs} ms`)),
        this.o.timeoutMs,
      );
      sock.on('error', (err) => done(err));
      sock.on('message', (msg, from) => {
        // Only the server asked, and only the answer to this query (its id): anything else is dropped.
        if (from.address !== server.host || from.port !== server.port || msg.length < 12 || msg.readUInt16BE(0) !== id)
          return;
        done(null, msg);
      });
      sock.send(query, server.port, server.host);
    });
  }

  private tcp(server: { host: string; port: number }, query: Buffer): Promise<Buffer> {
    const max = this.o.maxBytes ?? 65_535;
    return new Promise((resolve, reject) => {
      const sock = net.connect(server.port, server.host);
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (err: Error | null, buf?: Buffer) => {
        clearTimeout(timer);
        sock.destroy();
        if (err) reject(err);
        else resolve(buf!);
      };
      const timer = setTimeout(() => done(new Error(`no TCP answer from ${server.host}`)), this.o.timeoutMs);
      sock.on('error', (err) => done(err));
      sock.on('connect', () => sock.write(Buffer.concat([u16(query.length), query])));
      sock.on('data', (c: Buffer) => {
        chunks.push(c);
        size += c.length;
        const all = Buffer.concat(chunks);
        if (all.length >= 2 && all.readUInt16BE(0) > max) return done(new Error(`answer over ${max} bytes`));
        if (all.length >= 2 && all.length >= all.readUInt16BE(0) + 2)
          done(null, all.subarray(2, all.readUInt16BE(0) + 2));
        else if (size > max + 2) done(new Error(`answer over ${max} bytes`));
      });
      sock.on('end', () => done(new Error('connection closed before the answer')));
    });
  }
}

function u16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

/** The answer decoded, checked to be the one to this query (id and question). */
function decodeFor(buf: Buffer, id: number, name: string, type: string): Decoded {
  const res = packet.decode(buf) as Decoded;
  const q = res.questions?.[0];
  if (res.id !== id || !q || q.type !== type || q.name.toLowerCase() !== name.toLowerCase().replace(/\.$/, ''))
    throw new Error('answer does not match the query');
  return res;
}
