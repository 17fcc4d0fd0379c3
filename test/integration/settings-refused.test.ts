// `mta serve` with a bad setting stops at once, naming the variable and what it accepts; an unknown MTA_* variable
// and a host name that is not fully qualified are warnings at start; a listener that cannot bind is named
// (operations spec, "Running it in production"). Real child processes; nothing leaves loopback.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, testEngine } from '../helpers/service.js';
import { mta, serveChild } from '../helpers/cli.js';

describe('mta serve: settings refused or warned about', function () {
  this.timeout(120_000);
  const base = () => ({
    MTA_DATA_DIR: tempDir(),
    MTA_HTTP_PORT: '0',
    MTA_SMTP_PORT: '0',
    MTA_SMTP_HOST: '127.0.0.1',
    MTA_SUBMISSION_PORT: '0',
    MTA_SUBMISSION_HOST: '127.0.0.1',
    MTA_HOSTNAME: 'mta.test',
  });
  const notPem = path.join(tempDir(), 'not.pem');
  fs.writeFileSync(notPem, 'this is not PEM\n');

  const cases: [string, Record<string, string>, RegExp][] = [
    [
      'a data folder under /proc',
      { MTA_DATA_DIR: '/proc/nonexistent/x' },
      /MTA_DATA_DIR.*a folder this user can create/,
    ],
    [
      'a sending IP that is none',
      { MTA_SENDING_IPS: '192.0.2.1,999.0.0.1' },
      /MTA_SENDING_IPS: IPv4 or IPv6 addresses.*999\.0\.0\.1/,
    ],
    ['MTA_PG_COMMIT_AHEAD=maybe', { MTA_PG_COMMIT_AHEAD: 'maybe' }, /MTA_PG_COMMIT_AHEAD: on or off.*maybe/],
    ['MTA_PG_POOL_SIZE=lots', { MTA_PG_POOL_SIZE: 'lots' }, /MTA_PG_POOL_SIZE: an integer from 0 to 64.*lots/],
    ['MTA_PG_POOLED_TURNS=yes', { MTA_PG_POOLED_TURNS: 'yes' }, /MTA_PG_POOLED_TURNS: on or off.*yes/],
    [
      'MTA_HEAP_GROWING_PERCENT=1000',
      { MTA_HEAP_GROWING_PERCENT: '1000' },
      /MTA_HEAP_GROWING_PERCENT: an integer from 0 to 300.*1000/,
    ],
    [
      'an alert webhook URL without its secret',
      { MTA_ALERT_WEBHOOK_URL: 'https://ops.example/alerts' },
      /MTA_ALERT_WEBHOOK_SECRET: the secret that signs/,
    ],
    [
      'an alert webhook secret that is not whsec_',
      { MTA_ALERT_WEBHOOK_URL: 'https://ops.example/alerts', MTA_ALERT_WEBHOOK_SECRET: 'hunter2' },
      /MTA_ALERT_WEBHOOK_SECRET: a Standard Webhooks secret/,
    ],
    [
      'a certificate without its key',
      { MTA_SMTP_TLS_CERT_FILE: notPem },
      /MTA_SMTP_TLS_KEY_FILE: the other half of MTA_SMTP_TLS_CERT_FILE/,
    ],
    [
      'a key and certificate that are not PEM',
      { MTA_SMTP_TLS_CERT_FILE: notPem, MTA_SMTP_TLS_KEY_FILE: notPem },
      /MTA_SMTP_TLS_KEY_FILE: a PEM private key/,
    ],
    [
      'a missing certificate file',
      { MTA_SMTP_TLS_CERT_FILE: '/nonexistent.pem', MTA_SMTP_TLS_KEY_FILE: notPem },
      /MTA_SMTP_TLS_CERT_FILE: a readable PEM file.*nonexistent\.pem/,
    ],
    ['MTA_LOG_LEVEL=loud', { MTA_LOG_LEVEL: 'loud' }, /MTA_LOG_LEVEL: one of fatal, error, warn, info, debug, trace/],
    [
      'an HTTP host that is no address',
      { MTA_HTTP_HOST: '999.0.0.1' },
      /MTA_HTTP_HOST: an IP address or a host name.*999\.0\.0\.1/,
    ],
    ['an HTTP port out of range', { MTA_HTTP_PORT: '70000' }, /MTA_HTTP_PORT: an integer from 0 to 65535/],
    ['a port that is no number', { MTA_SMTP_PORT: 'smtp' }, /MTA_SMTP_PORT: an integer from 0 to 65535; got "smtp"/],
  ];
  for (const [what, env, message] of cases)
    it(`refuses ${what}, naming the variable and what it accepts`, async function () {
      // Settings are read and refused before any store is opened (src/main.ts): the engine plays no part, and the
      // SQLite pass runs each case (on PostgreSQL each would only add a database and a process start).
      if (testEngine() === 'pg') this.skip();
      const r = await mta(['serve'], { ...base(), ...env }, { timeout: 60_000 });
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.match(message);
    });

  it('names a listener that cannot bind', async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this host: EADDRNOTAVAIL, nothing sent.
    const http = await mta(['serve'], { ...base(), MTA_HTTP_HOST: '192.0.2.1' }, { timeout: 60_000 });
    expect(http.code).to.equal(1);
    expect(http.stderr).to.match(/the HTTP listener cannot listen on 192\.0\.2\.1:0 \(MTA_HTTP_HOST, MTA_HTTP_PORT\)/);
    const smtp = await mta(['serve'], { ...base(), MTA_SMTP_HOST: '192.0.2.1' }, { timeout: 60_000 });
    expect(smtp.code).to.equal(1);
    expect(smtp.stderr).to.match(
      /the inbound SMTP listener cannot listen on 192\.0\.2\.1:0 \(MTA_SMTP_HOST, MTA_SMTP_PORT\)/,
    );
  });

  it('warns at start about an unknown MTA_* variable and a host name that is not fully qualified', async () => {
    const { child, log } = await serveChild({ ...base(), MTA_HTTP_PORTT: '8080', MTA_HOSTNAME: 'mailhost' });
    try {
      const warnings = log()
        .split('\n')
        .filter((l) => /"level":40/.test(l));
      expect(warnings.join('\n')).to.match(/unknown variable MTA_HTTP_PORTT ignored.*did you mean MTA_HTTP_PORT\?/);
      expect(warnings.join('\n')).to.match(/MTA_HOSTNAME \\"mailhost\\" is not a fully qualified name/);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('serves as one process with the retired MTA_HTTP_WORKERS set, warning once that it is ignored', async () => {
    // HTTP workers were retired (docs/operations.md "HTTP workers"): an operator's upgrade keeps its settings.
    const { child, url, log } = await serveChild({ ...base(), MTA_HTTP_WORKERS: '2', MTA_HTTP_LEASE_MS: '3000' });
    try {
      // Up once it logged its listeners (serveChild waits for that line).
      expect((await fetch(`${url}/healthz`)).status, log().slice(-2000)).to.equal(200);
      const api = await fetch(`${url}/v1/emails`, { headers: { authorization: 'Bearer not-a-key' } });
      expect(api.status).to.equal(401);
      expect(((await api.json()) as { error: { type: string } }).error.type).to.equal('authentication_error');
      const warnings = log()
        .split('\n')
        .filter((l) => l.includes('HTTP workers were retired'));
      expect(warnings, log().slice(-2000)).to.have.length(1);
      expect(warnings[0]).to.match(
        /"level":40.*MTA_HTTP_WORKERS=2, MTA_HTTP_LEASE_MS=3000 ignored.*one process serves/,
      );
      // The workers were `mta serve` again, forked right after the listener started (before the first request was
      // answered). Other children may be there (esbuild's service when the sources run: src/outbound/signer.ts).
      const children = childrenOf(child.pid!);
      expect(
        children.filter((c) => /\bserve\b/.test(c)),
        `processes started by mta serve: ${JSON.stringify(children)}`,
      ).to.eql([]);
    } finally {
      child.kill('SIGTERM');
    }
  });
});

/** The command lines of the processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)))
    try {
      // /proc/N/stat: "N (comm) state ppid …"; the command name may hold spaces and parentheses.
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid)
        out.push(fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim());
    } catch {
      /* ended meanwhile */
    }
  return out;
}
