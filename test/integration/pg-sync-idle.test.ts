// Issue 38 item 3 (docs/async-store.md "Session 22"): with the pool and MTA_PG_POOLED_TURNS on, a node that accepts
// and delivers sends nothing on its synchronous PostgreSQL connection, each of whose round trips would hold the event
// loop: the accepts, API key reads, the delivery loop's claims and results, the signing key (read again every second),
// the tracking secret, a message's attachments and the delivery controller's once-a-second reads and writes all go
// to the pool. Counted by the synchronous client itself (storeCounters), over a window with emails accepted and
// delivered, two controller ticks and a signing key's re-read in it. The test's own waiting watches the MX, not the
// API (its GETs still run on that connection). PostgreSQL only (MTA_TEST_ENGINE=pg).
import { expect } from 'chai';
import { outboundEnv, sleep } from './outbound-env.js';
import { testEngine } from '../helpers/service.js';
import { storeCounters } from '../../src/store/db.js';

describe('PostgreSQL: nothing on the synchronous connection while the node accepts and delivers', function () {
  this.timeout(60_000);
  before(function () {
    if (testEngine() !== 'pg') this.skip();
  });

  it('sends no statement there in steady state (pool and pooled turns on)', async () => {
    const e = await outboundEnv({ pgPoolSize: 4 });
    const delivered = async (n: number) => {
      for (const until = Date.now() + 20_000; e.mx.messages.length < n && Date.now() < until;) await sleep(20);
      expect(e.mx.messages.length).to.equal(n);
    };
    const html = '<p>Hello <a href="https://example.com/x">there</a></p>';
    const attachments = [{ filename: 'a.txt', content: Buffer.from('attached').toString('base64') }];
    try {
      await e.send({ to: 'first@rcpt.test', html, tracking: { opens: true, clicks: true }, attachments });
      await delivered(1);
      await sleep(1200); // the controller's first ticks (its restore at start is synchronous)
      const before = storeCounters(e.s.db)!.statements;
      for (let i = 0; i < 10; i++)
        await e.send({
          to: `n${i}@rcpt.test`,
          html,
          tracking: { opens: true, clicks: true },
          ...(i % 2 ? { attachments } : {}),
        });
      await delivered(11);
      await sleep(2200); // two more ticks; the signing key read again (1 s on PostgreSQL), the API key (2 s)
      await e.send({ to: 'last@rcpt.test', html, tracking: { opens: true, clicks: true }, attachments });
      await delivered(12);
      expect(storeCounters(e.s.db)!.statements - before, 'statements on the synchronous connection').to.equal(0);
      expect(e.mx.messages.at(-1)!.raw.toString(), 'its attachment').to.include('a.txt');
    } finally {
      await e.close();
    }
  });
});
