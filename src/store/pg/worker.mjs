// The PostgreSQL side of the synchronous bridge (see ./sync-client.ts): one `pg` client on a worker thread.
// Plain JS (no TypeScript loader in workers). It receives one query at a time on `port`, runs it, posts the
// result back and wakes the waiting main thread through the shared flag.
import { workerData } from 'node:worker_threads';
import pg from 'pg';

const { url, port, flag: sab } = workerData;
const flag = new Int32Array(sab);
const client = new pg.Client({ connectionString: url });
// Integers (int8) and numerics come back as JS numbers: timestamps are ms, counts fit easily.
const asNumber = (v) => (v === null ? null : Number(v));
const types = {
  getTypeParser: (oid, format) => (oid === 20 || oid === 1700 ? asNumber : pg.types.getTypeParser(oid, format)),
};

function reply(msg) {
  port.postMessage(msg);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

// A dropped connection (server shut down, network) fails the next query with this error instead of crashing.
let lost = null;
client.on('error', (err) => {
  lost = err;
});
const ready = client.connect().then(
  () => null,
  (err) => err,
);

async function run(q) {
  const r = await client.query({
    text: q.text,
    values: q.values,
    rowMode: q.array ? 'array' : undefined,
    types,
    name: q.name,
  });
  // Buffers (bytea) cross the thread boundary as plain Uint8Arrays: name the columns to turn back.
  const bin = r.fields?.filter((f) => f.dataTypeID === 17).map((f) => (q.array ? r.fields.indexOf(f) : f.name));
  return { rows: r.rows, rowCount: r.rowCount, bin: bin?.length ? bin : undefined };
}

// A message is a batch of statements run in order; the answer holds each one's result, up to the first error.
port.on('message', async (m) => {
  const err0 = await ready;
  if (err0 || lost)
    return reply({ results: [], error: { message: (err0 ?? lost).message, code: (err0 ?? lost).code } });
  if (m.end) {
    await client.end().catch(() => {});
    return reply({ results: [] });
  }
  const results = [];
  for (const q of m.batch) {
    try {
      results.push(await run(q));
    } catch (e) {
      return reply({
        results,
        error: { message: e.message, code: e.code, detail: e.detail, constraint: e.constraint },
      });
    }
  }
  reply({ results });
});
