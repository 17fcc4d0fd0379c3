// SIGHUP on `mta serve` (a child process) re-reads MTA_SMTP_TLS_CERT_FILE / MTA_SMTP_TLS_KEY_FILE: a new STARTTLS
// session on the inbound and submission listeners sees the new certificate, a session opened before stays alive,
// and a bad file keeps the certificate in use, logged at error level naming the file.
import { expect } from 'chai';
import { execFileSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { tempDir } from '../helpers/temp.js';
import { quietEnv, serveChild } from '../helpers/cli.js';

/** A self-signed certificate and its key (openssl), written to cert.pem / key.pem under `dir`; answers its SHA-256. */
function makeCert(dir: string, cn: string): { cert: string; key: string; fingerprint: string } {
  const [cert, key] = [path.join(dir, `${cn}.crt`), path.join(dir, `${cn}.key`)];
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', `/CN=${cn}`, '-keyout', key, '-out', cert,
  ], { stdio: 'ignore' }); // prettier-ignore
  return { cert, key, fingerprint: new crypto.X509Certificate(fs.readFileSync(cert)).fingerprint256 };
}

/** An SMTP session on loopback upgraded with STARTTLS: the certificate it saw, and a way to send a command. */
async function startTls(port: number) {
  const plain = net.connect(port, '127.0.0.1');
  let buf = '';
  const reply = (sock: net.Socket) =>
    new Promise<string>((resolve, reject) => {
      const on = (c: Buffer) => {
        buf += c;
        const m = /(^|\n)(\d{3}) [^\n]*\r?\n$/.exec(buf);
        if (m) {
          sock.off('data', on);
          const r = buf;
          buf = '';
          resolve(r);
        }
      };
      sock.on('data', on);
      sock.once('error', reject);
    });
  await reply(plain);
  plain.write('EHLO client.test\r\n');
  await reply(plain);
  plain.write('STARTTLS\r\n');
  expect(await reply(plain)).to.match(/^220/);
  const sock = tls.connect({ socket: plain, rejectUnauthorized: false, servername: 'mta.test' });
  await new Promise((r, j) => sock.once('secureConnect', r).once('error', j));
  const fingerprint = sock.getPeerX509Certificate()!.fingerprint256;
  const command = async (line: string) => {
    sock.write(`${line}\r\n`);
    return reply(sock);
  };
  return { fingerprint, command, end: () => sock.destroy() };
}

describe('SIGHUP: the SMTP listeners read their TLS certificate again', function () {
  this.timeout(60_000);
  let child: ChildProcess | undefined;
  after(() => {
    child?.kill('SIGKILL');
  });

  it('new sessions get the new certificate, open ones stay, a bad file keeps the old one', async () => {
    const dir = tempDir('mta-tls-reload-');
    const a = makeCert(dir, 'a');
    const b = makeCert(dir, 'b');
    const [certFile, keyFile] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    fs.copyFileSync(a.cert, certFile);
    fs.copyFileSync(a.key, keyFile);
    const env = quietEnv(path.join(dir, 'data'), {
      MTA_SUBMISSION_HOST: '127.0.0.1',
      MTA_HOSTNAME: 'mta.test',
      MTA_SMTP_TLS_CERT_FILE: certFile,
      MTA_SMTP_TLS_KEY_FILE: keyFile,
    });
    const svc = await serveChild(env);
    child = svc.child;
    const ports = ['smtp', 'submission'].map((n) => Number(new RegExp(`${n}=[0-9.]+:(\\d+)`).exec(svc.log())![1]));
    const open = [];
    for (const port of ports) {
      const s = await startTls(port);
      expect(s.fingerprint).to.equal(a.fingerprint);
      open.push(s);
    }

    fs.copyFileSync(b.cert, certFile);
    fs.copyFileSync(b.key, keyFile);
    child.kill('SIGHUP');
    const until = Date.now() + 10_000;
    while (!/TLS certificate reloaded/.test(svc.log()) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 20));
    for (const port of ports) {
      const s = await startTls(port);
      expect(s.fingerprint, `port ${port}`).to.equal(b.fingerprint);
      s.end();
    }
    for (const s of open) expect(await s.command('NOOP')).to.match(/^250/); // the session opened before is alive

    // A certificate file that is no PEM: the pair in use stays, and the log names the file.
    fs.writeFileSync(certFile, 'not a certificate\n');
    child.kill('SIGHUP');
    const until2 = Date.now() + 10_000;
    while (!/not reloaded/.test(svc.log()) && Date.now() < until2) await new Promise((r) => setTimeout(r, 20));
    const line = svc
      .log()
      .split('\n')
      .find((l) => /not reloaded/.test(l))!;
    expect(line).to.include('"level":50').and.include(certFile);
    for (const port of ports) {
      const s = await startTls(port);
      expect(s.fingerprint).to.equal(b.fingerprint);
      s.end();
    }
    for (const s of open) s.end();
    expect(child.exitCode).to.equal(null);
  });
});
