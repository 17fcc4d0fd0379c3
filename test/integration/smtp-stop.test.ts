// SIGTERM and the SMTP listeners (decisions.md "When the store fails"): sessions open at the signal are told
// `421 4.3.2` (an idle one at once, one in a transaction at its next command), not smtp-server's own `421 4.4.2`;
// new connections are refused; the process still exits 0.
import { expect } from 'chai';
import net from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { TestDns } from '../helpers/dns.js';
import { tempDir } from '../helpers/service.js';
import { liveSender, loopbackEnv, serveChild } from '../helpers/cli.js';

/** A line-by-line SMTP client on a raw socket: every reply line received, and the socket's end. */
class Session {
  lines: string[] = [];
  closed = false;
  private sock: net.Socket;
  constructor(port: number) {
    this.sock = net.connect(port, '127.0.0.1');
    let buf = '';
    this.sock.on('data', (c) => {
      buf += String(c);
      for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
        this.lines.push(buf.slice(0, i));
        buf = buf.slice(i + 2);
      }
    });
    this.sock.on('close', () => (this.closed = true));
    this.sock.on('error', () => undefined);
  }
  /** Waits for a final reply line (`NNN ` form) after the `n`-th line received so far; returns it. */
  async reply(from = this.lines.length, ms = 5000): Promise<string> {
    for (const end = Date.now() + ms; Date.now() < end; await sleep(10)) {
      const l = this.lines.slice(from).find((x) => /^\d{3} /.test(x));
      if (l) return l;
      if (this.closed) break;
    }
    throw new Error(`no reply; got ${JSON.stringify(this.lines)}`);
  }
  async cmd(line: string): Promise<string> {
    const from = this.lines.length;
    this.sock.write(`${line}\r\n`);
    return this.reply(from);
  }
  end() {
    this.sock.destroy();
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const portOf = (log: string, name: string) => Number(new RegExp(`${name}=[0-9.]+:(\\d+)`).exec(log)![1]);

describe('SIGTERM: open SMTP sessions are told 421 4.3.2', function () {
  this.timeout(60_000);
  let child: ChildProcess | undefined;
  let dns: TestDns;
  const sessions: Session[] = [];
  after(async () => {
    for (const s of sessions) s.end();
    child?.kill('SIGKILL');
    await dns?.stop();
  });

  it('idle sessions at once, sessions in a transaction at their next command; new connections refused', async () => {
    dns = await new TestDns().start();
    const env = loopbackEnv(tempDir('mta-smtp-stop-'), dns.server, 9, { MTA_LOG_LEVEL: 'info' });
    const key = await liveSender(env, dns, 'smtp-stop');
    const svc = await serveChild(env);
    child = svc.child;
    const open = async (name: string) => {
      const s = new Session(portOf(svc.log(), name));
      sessions.push(s);
      expect(await s.reply(0)).to.match(/^220 /);
      expect(await s.cmd('EHLO client.test')).to.match(/^250 /);
      return s;
    };
    const auth = `AUTH PLAIN ${Buffer.from(`\0key\0${key}`).toString('base64')}`;
    const idle = await open('submission');
    expect(await idle.cmd(auth)).to.match(/^235 /);
    const busy = await open('submission');
    expect(await busy.cmd(auth)).to.match(/^235 /);
    expect(await busy.cmd('MAIL FROM:<app@sender.test>')).to.match(/^250 /);
    const inIdle = await open('smtp');
    const inBusy = await open('smtp');
    expect(await inBusy.cmd('MAIL FROM:<someone@elsewhere.test>')).to.match(/^250 /);

    const idleFrom = idle.lines.length;
    const inIdleFrom = inIdle.lines.length;
    child.kill('SIGTERM');
    // Unasked: the idle sessions hear 421 4.3.2 and are closed.
    expect(await idle.reply(idleFrom)).to.match(/^421 4\.3\.2 /);
    expect(await inIdle.reply(inIdleFrom)).to.match(/^421 4\.3\.2 /);
    // The sessions in a transaction: their next command.
    expect(await busy.cmd('RCPT TO:<u@rcpt.test>')).to.match(/^421 4\.3\.2 /);
    expect(await inBusy.cmd('RCPT TO:<u@elsewhere.test>')).to.match(/^421 4\.3\.2 /);
    for (const s of [idle, busy, inIdle, inBusy]) {
      for (let i = 0; i < 100 && !s.closed; i++) await sleep(20);
      expect(s.closed, 'closed after its 421').to.equal(true);
    }
    // No new session is opened once the listener stops.
    const late = new Session(portOf(svc.log(), 'submission'));
    sessions.push(late);
    await sleep(300);
    expect(late.lines.filter((l) => l.startsWith('220'))).to.deep.equal([]);
    const code = await new Promise<number | null>((r) =>
      child!.exitCode !== null ? r(child!.exitCode) : child!.once('exit', (c) => r(c)),
    );
    expect(code).to.equal(0);
  });
});
