// What the result-writer tests share: a service with the API only (no delivery loop takes their emails), a test
// key, and a send that answers the new email's seq.
import { expect } from 'chai';
import type { ResultSink } from '../../src/outbound/results.js';
import { storeCounters } from '../../src/store/db.js';
import { runSync } from '../../src/store/op.js';
import { lightTxLater } from '../../src/store/queue.js';
import {
  applyOutcomesPlan,
  OutcomeBatch,
  verifyOutcomesPlan,
  type OutcomeReads,
  type RecipientOutcome,
} from '../../src/services/transition.js';
import type { PgDatabase } from '../../src/store/pg/database.js';
import { startTestService, type TestService } from '../helpers/service.js';

export interface ResultEnv {
  s: TestService;
  teamId: string;
  /** Posts an email to `to` with the test key; its seq. */
  send(to: string[]): Promise<number>;
}

/** `pooledTurns: false`: PostgreSQL's result batches on the synchronous connection (MTA_PG_POOLED_TURNS=off). */
export async function resultEnv(opts: { pooledTurns?: boolean } = {}): Promise<ResultEnv> {
  const s = await startTestService({ features: [], pooledTurns: opts.pooledTurns });
  const teamId = s.team().id;
  const key = s.key(teamId, 'test');
  return {
    s,
    teamId,
    async send(to) {
      const r = await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@sender.test', to, subject: 'batch', text: 'hello' },
      });
      expect(r.status).to.equal(202);
      return s.db.prepare('SELECT seq FROM emails WHERE id = ?').pluck().get(r.body.id) as number;
    },
  };
}

/**
 * Flushes the sink; PostgreSQL: the round trips and statements that took, and whether its COMMIT was still in flight
 * when flush returned (null on SQLite).
 */
export function flushCounted(s: TestService, sink: ResultSink) {
  const before = storeCounters(s.db);
  sink.flush();
  const after = storeCounters(s.db);
  if (!before || !after) return null;
  return {
    roundTrips: after.roundTrips - before.roundTrips,
    statements: after.statements - before.statements,
    inFlight: (s.db as PgDatabase).client.inFlight,
  };
}

/**
 * Applies each email's outcomes from `pre` (what was read, or known) in one transaction whose COMMIT is sent without
 * waiting, the writes checked (verifyOutcomes `onServer`): the error that undid it (SQLite: thrown by the check;
 * PostgreSQL: the server's), or null.
 */
export async function writeChecked(
  s: TestService,
  items: { seq: number; outcomes: RecipientOutcome[]; pre: OutcomeReads }[],
): Promise<unknown> {
  let error: unknown = 'not called';
  try {
    lightTxLater(
      s.db,
      () => {
        const writes = new OutcomeBatch();
        for (const i of items) runSync(applyOutcomesPlan(s.ctx, i.seq, i.outcomes, new Set(), { pre: i.pre, writes }));
        runSync(verifyOutcomesPlan(s.ctx, writes, true));
      },
      (err) => (error = err),
    );
  } catch (err) {
    error = err; // SQLite: thrown by verifyOutcomes, the transaction rolled back
  }
  s.db.prepare('SELECT 1').get(); // reads the COMMIT's answer first (PostgreSQL); `done` runs in a microtask
  await new Promise((r) => setImmediate(r));
  return error;
}
