// The SMTP client writes a message's bytes and its closing dot in one write (one segment for the server to read),
// dot-stuffed as before. The writes are seen where they reach the socket's handle (one call per system call); the
// server is a bare TCP listener speaking just enough SMTP.
import net from 'node:net';
import { expect } from 'chai';
import { SmtpClient } from '../../src/outbound/smtp.js';

interface Received {
  data: string;
}

/** Every write the process's TCP sockets hand to their handles (one system call each), as text. */
function recordWrites(): { writes: string[]; stop(): void } {
  type WriteGeneric = (writev: boolean, data: unknown, encoding: string, cb: unknown) => unknown;
  const proto = net.Socket.prototype as unknown as { _writeGeneric: WriteGeneric };
  const original = proto._writeGeneric;
  const writes: string[] = [];
  const text = (c: unknown) => (Buffer.isBuffer(c) ? c.toString('latin1') : String(c));
  proto._writeGeneric = function (this: unknown, writev, data, encoding, cb) {
    const chunks = writev ? (data as { chunk: unknown }[]).map((c) => c.chunk) : [data];
    writes.push(chunks.map(text).join(''));
    return original.call(this, writev, data, encoding, cb);
  };
  return { writes, stop: () => void (proto._writeGeneric = original) };
}

/** A loopback MX keeping each message's data. */
function rawMx(): Promise<{ port: number; messages: Received[]; close(): Promise<void> }> {
  const messages: Received[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ noDelay: true }, (sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    let buf = '';
    let msg: Received | null = null;
    sock.write('220 mx.test ESMTP\r\n');
    sock.on('data', (chunk) => {
      if (msg) {
        msg.data += chunk.toString('latin1');
        if (!msg.data.endsWith('\r\n.\r\n')) return;
        messages.push(msg);
        msg = null;
        sock.write('250 2.0.0 queued\r\n');
        return;
      }
      buf += chunk.toString('latin1');
      let i: number;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') sock.write('250-mx.test\r\n250 PIPELINING\r\n');
        else if (verb === 'QUIT') sock.end('221 bye\r\n');
        else if (verb === 'DATA') {
          sock.write('354 go on\r\n');
          msg = { data: '' };
        } else sock.write('250 ok\r\n');
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        messages,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      }),
    ),
  );
}

describe('SMTP client: one write per message body', function () {
  this.timeout(20_000);

  it('sends each message and its closing dot in one segment, dot-stuffed', async () => {
    const mx = await rawMx();
    const rec = recordWrites();
    const client = new SmtpClient({
      hostname: 'mta.test',
      port: mx.port,
      tls: 'off',
      timeoutMs: 5000,
      maxMessages: 100,
    });
    try {
      for (let i = 0; i < 20; i++) {
        const raw = Buffer.from(`Subject: ${i}\r\n\r\nline one\r\n.starts with a dot\r\n${'x'.repeat(2000)}\r\n`);
        const r = await client.send(
          { mxHost: 'mx.test', ip: '127.0.0.1' },
          'b@acme.test',
          [`u${i}@rcpt.test`],
          raw,
          Date.now() + 5000,
          undefined,
          {
            pool: 'lane',
          },
        );
        expect(r.verdicts[0].kind).to.equal('accepted');
      }
      expect(mx.messages).to.have.length(20);
      // the write that carries a message's first bytes also carries its end
      const bodies = rec.writes.filter((w) => w.includes('line one'));
      expect(bodies).to.have.length(20);
      for (const w of bodies) expect(w.endsWith('x\r\n.\r\n')).to.equal(true, JSON.stringify(w.slice(-20)));
      // a message over the socket's high-water mark (its writer waits for 'drain' before the dot) goes too
      const big = Buffer.from(`Subject: big\r\n\r\n${'y'.repeat(998)}\r\n`.repeat(300));
      const r = await client.send(
        { mxHost: 'mx.test', ip: '127.0.0.1' },
        'b@acme.test',
        ['big@rcpt.test'],
        big,
        Date.now() + 5000,
        undefined,
        {
          pool: 'lane',
        },
      );
      expect(r.verdicts[0].kind).to.equal('accepted');
      expect(mx.messages[20].data).to.equal(big.toString('latin1') + '.\r\n');
      expect(mx.messages[3].data).to.equal(
        `Subject: 3\r\n\r\nline one\r\n..starts with a dot\r\n${'x'.repeat(2000)}\r\n.\r\n`,
      );
    } finally {
      rec.stop();
      client.closeAll();
      await mx.close();
    }
  });
});
