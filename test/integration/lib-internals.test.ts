// The private fields src/lib/internals.ts reads, checked against the installed nodemailer and smtp-server:
// real messages through SMTPConnection to a loopback SMTPServer. An upgrade that moves or reshapes them fails here.
import net from 'node:net';
import { expect } from 'chai';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { SMTPServer } from 'smtp-server';
import { connectionsOf, rejectedRecipientsOf, socketOf } from '../../src/lib/internals.js';

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

describe('private fields of nodemailer and smtp-server (src/lib/internals.ts)', () => {
  let server: SMTPServer;
  let port: number;
  before(async () => {
    server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      disableReverseLookup: true,
      onRcptTo: (a, _s, cb) => cb(a.address.startsWith('bad') ? smtpError(550, '5.1.1 No such user') : undefined),
      onData: (stream, session, cb) => {
        stream.resume();
        const refuse = session.envelope.rcptTo.some((r) => r.address.startsWith('refuse-data'));
        stream.on('end', () => cb(refuse ? smtpError(554, '5.7.1 Message refused') : null));
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.server.address() as net.AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  async function connect(): Promise<SMTPConnection> {
    const conn = new SMTPConnection({
      host: '127.0.0.1',
      port,
      ignoreTLS: true,
      logger: false,
      connectionTimeout: 5000,
    });
    conn.on('error', () => {});
    await new Promise<void>((resolve, reject) => conn.connect((err) => (err ? reject(err) : resolve())));
    return conn;
  }
  const send = (conn: SMTPConnection, to: string[]) =>
    new Promise<{ err: (Error & { command?: string; rejectedErrors?: unknown[] }) | null }>((resolve) => {
      conn.send({ from: 'a@example.test', to }, 'Subject: x\r\n\r\nhello\r\n', (err) => resolve({ err: err as never }));
    });

  it('SMTPServer.connections: a Set of connections with remoteAddress, send and close; left on close', async () => {
    const conn = await connect();
    const set = connectionsOf(server);
    expect(set).to.be.instanceOf(Set);
    expect(set.size).to.equal(1);
    const c = [...set][0];
    expect(c.remoteAddress).to.match(/^(::ffff:)?127\.0\.0\.1$/);
    expect(c.send).to.be.a('function');
    expect(c.close).to.be.a('function');
    conn.quit();
    await new Promise((r) => conn.once('end', r));
    for (let i = 0; i < 50 && set.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(set.size).to.equal(0);
  });

  it('SMTPConnection._socket: the connected socket, with the local address', async () => {
    const conn = await connect();
    const sock = socketOf(conn);
    expect(sock).to.be.instanceOf(net.Socket);
    expect(sock!.localAddress).to.equal('127.0.0.1');
    expect(sock!.remotePort).to.equal(port);
    conn.close();
  });

  it('SMTPConnection._envelope.rejectedErrors: the RCPT refusals, still there after DATA is refused', async () => {
    const conn = await connect();
    const { err } = await send(conn, ['refuse-data@example.test', 'bad@example.test']);
    expect(err?.command).to.equal('DATA');
    expect(err?.rejectedErrors, 'nodemailer itself drops them from the DATA error').to.equal(undefined);
    const rejected = rejectedRecipientsOf(conn);
    expect(rejected).to.have.length(1);
    expect(rejected[0]).to.include({ recipient: 'bad@example.test', responseCode: 550 });
    expect(rejected[0].response).to.match(/^550 5\.1\.1/);
    conn.close();
  });

  it('no refusals on a clean transaction; a new one starts empty', async () => {
    const conn = await connect();
    expect(rejectedRecipientsOf(conn)).to.deep.equal([]);
    const ok = await send(conn, ['good@example.test']);
    expect(ok.err).to.equal(null);
    expect(rejectedRecipientsOf(conn)).to.deep.equal([]);
    conn.close();
  });
});
