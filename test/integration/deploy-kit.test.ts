// The deployment kit in deploy/: the Prometheus rules parse and name only metrics a running service exports, the
// systemd unit carries what docs/operations.md ("Production") promises and passes `systemd-analyze verify`.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { load } from 'js-yaml'; // a devDependency, the version mocha uses
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as operations } from '../../src/features/operations.js';
import { loadConfig } from '../../src/config/load.js';
import { startWarnings } from '../../src/config/check.js';

const file = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'bool', 'group_left']);
/** The metric names a PromQL expression reads: identifiers left once strings, matchers and ranges are gone. */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"[^"]*"/g, '')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names = [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((m) => m[1]);
  return [...new Set(names.filter((n) => !KEYWORDS.has(n) && !/^\d/.test(n)))];
}

describe('deployment kit (deploy/)', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [operations] });
  });
  after(() => s.close());

  it('alerts.yml parses and every metric its rules read is in a real /metrics scrape', async () => {
    const doc = load(file('deploy/alerts.yml')) as { groups: { name: string; rules: Rule[] }[] };
    const rules = doc.groups.flatMap((g) => g.rules);
    expect(rules.length).to.be.greaterThan(5);
    const key = s.key(s.team().id);
    const sent = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@x.test', to: 'b@y.test', subject: 's', text: 't' },
    });
    expect(sent.status).to.equal(202);
    const scrape = await (await fetch(`${s.url}/metrics`)).text();
    const exported = new Set([
      ...[...scrape.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]),
      ...[...scrape.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/gm)].map((m) => m[1]),
      'up', // written by Prometheus for each scrape target
    ]);
    const used = new Set<string>();
    for (const r of rules) {
      expect(r.alert, JSON.stringify(r)).to.match(/^Mta[A-Za-z]+$/);
      expect(r.labels.severity, r.alert).to.be.oneOf(['warning', 'critical']);
      expect(r.annotations.summary, r.alert).to.be.a('string');
      if (r.for !== undefined) expect(r.for, r.alert).to.match(/^\d+[smhd]$/);
      for (const n of metricNames(r.expr)) {
        used.add(n);
        expect(exported.has(n), `${r.alert}: ${n} is not exported`).to.equal(true);
      }
    }
    // The rules the issue asks for: queue age, deferrals, bounces, complaints, webhook backlog, disk.
    for (const m of [
      'mta_deliveries_due_lag_seconds',
      'mta_events_total',
      'mta_webhook_deliveries_pending',
      'mta_data_dir_free_bytes',
    ])
      expect([...used]).to.include(m);
    for (const t of ['delivery_delayed', 'bounced', 'complained'])
      expect(rules.some((r) => r.expr.includes(`type="${t}"`))).to.equal(true);
    expect(rules.some((r) => r.expr.includes('0.003'))).to.equal(true); // complaints over 0.3%
  });

  it('reads metric names out of PromQL', () => {
    expect(metricNames('sum(rate(a_total{type="x"}[1h])) / clamp_min(sum(rate(b_total[1h])), 0.001) > 0.2')).to.eql([
      'a_total',
      'b_total',
    ]);
    expect(metricNames('x > 1 and deriv(y[30m]) > 0 and predict_linear(z[6h], 24 * 3600) < 0')).to.eql(['x', 'y', 'z']);
  });

  it('mta.service: dedicated user, capability for ports < 1024, reload = SIGHUP, hardening; systemd accepts it', () => {
    const unit = file('deploy/mta.service');
    for (const line of [
      'User=mta',
      'EnvironmentFile=/etc/mta/mta.env',
      'AmbientCapabilities=CAP_NET_BIND_SERVICE',
      'Restart=on-failure',
      'ExecReload=/bin/kill -HUP $MAINPID',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ReadWritePaths=/var/lib/mta',
      'PrivateTmp=yes',
    ])
      expect(unit.split('\n'), line).to.include(line);
    expect(unit).to.match(/^Environment=.*\bMALLOC_ARENA_MAX=2\b.*\bMTA_DATA_DIR=\/var\/lib\/mta\b/m);
    // Longer than the drain: HTTP connections are closed at most 5 s after SIGTERM.
    expect(Number(/^TimeoutStopSec=(\d+)$/m.exec(unit)?.[1])).to.be.greaterThan(30);
    expect(unit).not.to.match(/^MemoryDenyWriteExecute=yes/m); // V8's JIT would die
    if (existsSync('/usr/bin/systemd-analyze')) {
      const out = execFileSync(
        'systemd-analyze',
        ['verify', new URL('../../deploy/mta.service', import.meta.url).pathname],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      expect(out).to.equal('');
    }
  });

  it('mta.env.example holds only settings the service knows, with valid values', () => {
    const env: Record<string, string> = {};
    for (const line of file('deploy/mta.env.example').split('\n')) {
      const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
      if (m) env[m[1]] = m[2];
    }
    env.MTA_DATA_DIR = '/var/lib/mta'; // set by the unit
    expect(Object.keys(env).length).to.be.greaterThan(10);
    const cfg = loadConfig({ env });
    expect(startWarnings(cfg, env)).to.eql([]);
    expect(cfg).to.include({ smtpPort: 25, submissionPort: 587, submissionsPort: 465, httpHost: '127.0.0.1' });
  });

  it('the Docker image and its documented run publish the submission port', () => {
    expect(file('Dockerfile')).to.match(/^EXPOSE .*\b2587\b/m);
    const run = /docker run .*$/m.exec(file('docs/operations.md'))?.[0] ?? '';
    expect(run).to.match(/-p 587:2587\b/);
    expect(run).to.match(/-p 25:2525\b/);
  });
});
