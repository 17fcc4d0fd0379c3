// Test data written straight to the store where the API has no shortcut (e.g. a verified domain
// without publishing DNS records).
import { generateKeyPairSync } from 'node:crypto';
import type { DB } from '../../src/store/db.js';
import { newId } from '../../src/core/ids.js';

/** Inserts a verified sending domain with a fresh RSA key; returns its id, selector and public key (base64). */
export function insertVerifiedDomain(db: DB, teamId: string, name: string, selector = 'mta1') {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const id = newId('dom', Date.now());
  db.prepare(
    `INSERT INTO domains (id, team_id, name, status, created_at, dkim_selector, dkim_algorithm, dkim_private_key, dkim_public_key)
    VALUES (?, ?, ?, 'verified', ?, ?, 'rsa', ?, ?)`,
  ).run(id, teamId, name, Date.now(), selector, pem, pub);
  return { id, selector, publicKey: pub, privateKey: pem };
}

export function count(db: DB, table: string, where = '1 = 1'): number {
  return (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${where}`).get() as { n: number }).n;
}
