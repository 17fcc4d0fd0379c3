// Per-team IP pools: MTA_IP_POOLS syntax and validation (start-up refused naming the setting), the
// config-file form, which pool a team uses, the held-address check and the stable per-destination pick.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/temp.js';
import { loadConfig } from '../../src/config/load.js';
import { parseIpPools, teamPool } from '../../src/config/ip-pools.js';
import { heldBy, rendezvous } from '../../src/outbound/sources.js';
import { spfMechanisms } from '../../src/core/domain-records.js';

describe('IP pools: configuration', () => {
  it('reads MTA_IP_POOLS: team=ip|ip;team=ip, spaces and empty entries ignored', () => {
    const c = loadConfig({
      env: { MTA_IP_POOLS: ' acme = 192.0.2.10 | 192.0.2.11 ; team_01abc=2001:db8::10|192.0.2.12;; ' },
    });
    expect(c.ipPools).to.deep.equal({ acme: ['192.0.2.10', '192.0.2.11'], team_01abc: ['2001:db8::10', '192.0.2.12'] });
    expect(loadConfig({ env: {} }).ipPools).to.deep.equal({});
    expect(parseIpPools('')).to.deep.equal({});
  });

  it('reads ipPools from the config file; the variable replaces it', () => {
    const file = path.join(tempDir('pools-'), 'c.json');
    fs.writeFileSync(file, JSON.stringify({ ipPools: { 'Big Team; Inc.': ['192.0.2.20'] } }));
    expect(loadConfig({ file, env: {} }).ipPools).to.deep.equal({ 'Big Team; Inc.': ['192.0.2.20'] });
    expect(loadConfig({ file, env: { MTA_IP_POOLS: 'x=192.0.2.1' } }).ipPools).to.deep.equal({ x: ['192.0.2.1'] });
  });

  it('refuses bad syntax and addresses, naming the setting', () => {
    const bad: [string, RegExp][] = [
      ['acme', /MTA_IP_POOLS.*lacks "="/],
      ['=192.0.2.1', /MTA_IP_POOLS.*names no team/],
      ['a=192.0.2.1;a=192.0.2.2', /MTA_IP_POOLS.*listed twice/],
      ['a=192.0.2.1||192.0.2.2', /MTA_IP_POOLS.*empty address/],
      ['a=', /MTA_IP_POOLS.*empty address/],
      ['a=192.0.2.0/24', /ipPools \(MTA_IP_POOLS\).*not an IP address/],
      ['a=mx.example.com', /ipPools \(MTA_IP_POOLS\).*not an IP address/],
      ['a=192.0.2.1,192.0.2.2', /ipPools \(MTA_IP_POOLS\)/],
      ['a=192.0.2.1|192.0.2.1', /ipPools \(MTA_IP_POOLS\).*listed twice/],
    ];
    for (const [raw, re] of bad) expect(() => loadConfig({ env: { MTA_IP_POOLS: raw } }), raw).to.throw(re);
    expect(() => loadConfig({ overrides: { ipPools: { a: [] } } })).to.throw(/ipPools \(MTA_IP_POOLS\)/);
    expect(() => loadConfig({ overrides: { ipPools: ['192.0.2.1'] as never } })).to.throw(/ipPools \(MTA_IP_POOLS\)/);
  });

  it("finds a team's pool by id first, then by name; none → default", () => {
    const pools = { acme: ['192.0.2.1'], team_1: ['192.0.2.2'] };
    expect(teamPool(pools, { id: 'team_1', name: 'acme' })).to.deep.equal(['192.0.2.2']);
    expect(teamPool(pools, { id: 'team_2', name: 'acme' })).to.deep.equal(['192.0.2.1']);
    expect(teamPool(pools, { id: 'team_3', name: 'globex' })).to.equal(null);
    expect(teamPool(pools, { id: 'team_4' })).to.equal(null);
    expect(teamPool({}, { id: 'constructor', name: 'toString' })).to.equal(null);
    expect(spfMechanisms(pools.acme, 'mx.test')).to.deep.equal(['ip4:192.0.2.1']);
  });
});

describe('IP pools: source addresses', () => {
  it("holds the interfaces' addresses and all of 127/8, nothing else", () => {
    const held = heldBy({
      eth0: [{ address: '192.0.2.7', netmask: '255.255.255.0', family: 'IPv4', mac: '', internal: false, cidr: null }],
    });
    for (const ip of ['192.0.2.7', '127.0.0.1', '127.0.0.2', '127.255.0.9']) expect(held(ip), ip).to.equal(true);
    for (const ip of ['192.0.2.8', '::2', '128.0.0.1']) expect(held(ip), ip).to.equal(false);
  });

  it('picks a stable address per key, spread over the pool; removing one address moves only its keys', () => {
    const pool = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'];
    const keys = Array.from({ length: 400 }, (_, i) => `team_1|mx${i}.example.com`);
    const pick = keys.map((k) => rendezvous(pool, k)!);
    expect(keys.map((k) => rendezvous([...pool].reverse(), k))).to.deep.equal(pick); // order does not matter
    for (const ip of pool) expect(pick.filter((p) => p === ip).length, ip).to.be.within(60, 140);
    const after = keys.map((k) => rendezvous(pool.slice(1), k));
    keys.forEach((_, i) => {
      if (pick[i] !== pool[0]) expect(after[i]).to.equal(pick[i]);
    });
    expect(rendezvous([], 'x')).to.equal(undefined);
  });
});
