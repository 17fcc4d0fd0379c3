// Trusted reverse proxies (setting trustedProxies, MTA_TRUSTED_PROXIES): IPv4/IPv6 addresses or CIDRs,
// turned into a net.BlockList; throws naming the first bad entry. No I/O.
import net from 'node:net';

/** The list as a BlockList (membership test); throws Error('…') for an entry that is not an address or CIDR. */
export function trustedProxyList(entries: readonly string[]): net.BlockList {
  const list = new net.BlockList();
  for (const raw of entries) {
    const [addr, bits, extra] = raw.trim().split('/');
    const family = net.isIP(addr);
    const max = family === 6 ? 128 : 32;
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max))
      throw new Error(`${JSON.stringify(raw)} is not an IP address or CIDR`);
    list.addSubnet(addr, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  return list;
}

/** True when `ip` (IPv4-mapped IPv6 judged as its IPv4) is in the list. */
export function isTrusted(list: net.BlockList, ip: string): boolean {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (v4) return list.check(v4, 'ipv4');
  const family = net.isIP(ip);
  return family !== 0 && list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}
