// Deferred INSERTs merged into multi-row statements (src/store/pg/coalesce.ts): what may move, what may not,
// and where each original statement's answer ends up. The server side is in test/integration/pg-client.test.ts.
import { expect } from 'chai';
import { answerOf, coalesce, type Query } from '../../src/store/pg/coalesce.js';

const q = (name: string, text: string, ...values: unknown[]): Query => ({ name, text, values });
const email = (seq: number) =>
  q('e', 'INSERT INTO emails (seq, subject) VALUES ($1, $2) RETURNING seq', seq, `s${seq}`);
const tag = (seq: number) =>
  q('t', 'INSERT INTO email_tags (tag, email_seq) VALUES ($1, $2) ON CONFLICT DO NOTHING', 'x', seq);
const delivery = (seq: number) =>
  q('d', 'INSERT INTO deliveries (email_seq, recipient) VALUES ($1, $2) RETURNING id', seq, 'a@b');
const event = (seq: number) => q('v', 'INSERT INTO events (email_seq, type) VALUES ($1, $2)', seq, 'queued');
const FKS = new Map([['deliveries', new Set(['emails'])]]);
const known = (t: string) => FKS.get(t) ?? new Set<string>();
/** The batch as `name:rows` (a statement not merged: its name). */
const shape = (qs: Query[], parents: Parameters<typeof coalesce>[1] = known) =>
  coalesce(qs, parents).batch.map((b) => (b.name?.includes('*') ? b.name : (b.name ?? b.text)));

describe('PostgreSQL: deferred INSERTs as multi-row statements', () => {
  it('merges the same INSERT of several requests, each table in its first place (parents before children)', () => {
    const turn = [1, 2, 3].flatMap((s) => [email(s), tag(s), delivery(s), event(s)]);
    // Tags ask ON CONFLICT DO NOTHING: each one's own row count matters, so they are never merged (and not moved).
    expect(shape(turn)).to.deep.equal(['e*2', 'e', 't', 'd*2', 'd', 'v*2', 'v', 't', 't']);
    const plan = coalesce(turn, known);
    expect(plan.batch[0].text).to.equal('INSERT INTO emails (seq, subject) VALUES ($1, $2), ($3, $4) RETURNING seq');
    expect(plan.batch[0].values).to.deep.equal([1, 's1', 2, 's2']);
    // Each original statement knows where its answer is.
    expect(plan.place[0]).to.deep.equal({ at: 0, row: 0, of: 2 });
    expect(plan.place[4]).to.deep.equal({ at: 0, row: 1, of: 2 });
    expect(plan.place[8]).to.deep.equal({ at: 1, row: 0, of: 1 });
    expect(answerOf({ rows: [{ seq: 1 }, { seq: 2 }], rowCount: 2 }, plan.place[4])).to.deep.equal({
      rows: [{ seq: 2 }],
      rowCount: 1,
    });
  });

  it('merges ON CONFLICT DO NOTHING INSERTs only when nobody reads their answers (fire), never with read ones', () => {
    const blind = (seq: number) => ({ ...tag(seq), blind: true });
    const turn = [1, 2, 3].flatMap((s) => [email(s), blind(s), delivery(s)]);
    expect(shape(turn)).to.deep.equal(['e*2', 'e', 't*2', 't', 'd*2', 'd']);
    // A read one stays alone, and blind ones after it do not join the blind ones before it (same table: no passing).
    expect(shape([blind(1), blind(2), tag(3), blind(4), blind(5)])).to.deep.equal(['t*2', 't', 't*2']);
    // With RETURNING, each row's answer is its own even when nobody reads it: left alone.
    const ret = (seq: number): Query => ({
      ...q(
        'tr',
        'INSERT INTO email_tags (tag, email_seq) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING tag',
        'x',
        seq,
      ),
      blind: true,
    });
    expect(shape([ret(1), ret(2)])).to.deep.equal(['tr', 'tr']);
  });

  it('splits a long run into chunks of powers of two, renumbering each row’s parameters', () => {
    const plan = coalesce([1, 2, 3, 4, 5, 6, 7].map(event), known);
    expect(plan.batch.map((b) => b.name)).to.deep.equal(['v*4', 'v*2', 'v']);
    expect(plan.batch[1].text).to.equal('INSERT INTO events (email_seq, type) VALUES ($1, $2), ($3, $4)');
    expect(plan.batch[1].values).to.deep.equal([5, 'queued', 6, 'queued']);
    expect(plan.place[6]).to.deep.equal({ at: 2, row: 0, of: 1 });
  });

  it('never moves an INSERT past a write of its parent table, of its own table, a read, a DELETE or a savepoint', () => {
    const upd = (t: string) => q(`u${t}`, `UPDATE ${t} SET status = $1 WHERE seq = $2`, 'sent', 1);
    expect(shape([delivery(1), upd('emails'), delivery(2)])).to.deep.equal(['d', 'uemails', 'd']);
    expect(shape([event(1), upd('events'), event(2)])).to.deep.equal(['v', 'uevents', 'v']);
    expect(shape([event(1), q('r', 'SELECT * FROM emails WHERE seq = $1', 1), event(2)])).to.deep.equal([
      'v',
      'r',
      'v',
    ]);
    expect(shape([event(1), q('x', 'DELETE FROM emails WHERE seq = $1', 1), event(2)])).to.deep.equal(['v', 'x', 'v']);
    expect(shape([event(1), { text: 'SAVEPOINT sp1', values: [] }, event(2)])).to.deep.equal([
      'v',
      'SAVEPOINT sp1',
      'v',
    ]);
    // Past an UPDATE of another table that is not its parent: yes (a delivery result's events).
    expect(shape([upd('deliveries'), event(1), upd('deliveries'), event(2)])).to.deep.equal([
      'udeliveries',
      'v*2',
      'udeliveries',
    ]);
    // Without the catalog's foreign keys: only with the statement just before.
    expect(shape([event(1), event(2), delivery(1), event(3)], () => undefined)).to.deep.equal(['v*2', 'd', 'v']);
  });

  it('leaves alone what a merge would change: INSERT … SELECT, upserts, unnamed statements', () => {
    const sel = q('s', 'INSERT INTO events (email_seq, type) SELECT $1, $2', 1, 'x');
    const ups = q(
      'p',
      'INSERT INTO stats (k, n) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = stats.n + 1',
      'k',
      1,
    );
    const unnamed = { text: 'INSERT INTO events (email_seq, type) VALUES ($1, $2)', values: [1, 'x'] };
    expect(shape([sel, sel, ups, ups])).to.deep.equal(['s', 's', 'p', 'p']);
    expect(coalesce([unnamed, unnamed], known).batch).to.have.length(2);
  });
});
