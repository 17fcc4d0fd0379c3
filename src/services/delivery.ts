// What the delivery loop needs of the store, in one place: the queue (claims under a lease, confirm,
// settle, release) and the next due time. Thin pass-throughs so src/outbound never imports src/store.
import type { DB as Db } from '../store/db.js';
import type { Claimed as ClaimedRow } from '../store/queue.js';
import type { EmailRow as Email } from '../store/emails.js';
import * as emailsStore from '../store/emails.js';
import * as queue from '../store/queue.js';
import { synced } from '../store/op.js';
export { lightTx, lightTxLater, type Claimed } from '../store/queue.js';
// The loop's claims and leases stay synchronous (inside its lightTx bodies): the plans run through runSync.
export const claimDue = synced(queue.claimDue);
export const confirmClaims = synced(queue.confirmClaims);
export const releaseClaims = synced(queue.releaseClaims);
export const dropClaims = synced(queue.dropClaims);
export const nextDue = synced(queue.nextDue);
export { type EmailRow } from '../store/emails.js';
import { poolOf, runPooled } from '../store/pg/plan-driver.js';
/**
 * PostgreSQL with a pool (`mta serve`, MTA_PG_POOL_SIZE > 0): the loop's claims, lease confirmations and next due
 * time run asynchronously on connections of their own (the event loop goes on meanwhile, several at once); these are
 * their promise forms. Without a pool the loop keeps the synchronous forms above.
 */
export const pooled = (db: Db): boolean => poolOf(db) !== undefined;
export const claimDueAsync = (db: Db, now: number, until: number, limit: number, skip: readonly string[]) =>
  runPooled(db, queue.claimDueWithEmails(db, now, until, limit, skip));
export const confirmClaimsAsync = (db: Db, ids: readonly number[], leases: readonly (number | null)[], until: number) =>
  runPooled(db, queue.confirmClaims(db, ids, leases, until));
export const nextDueAsync = (db: Db, skip: readonly string[] = []) => runPooled(db, queue.nextDue(db, skip));
/**
 * wakeDomains awaited on the pool (one statement): on the synchronous connection it could wait for a recipient's row
 * that a queue action or a cancel on the pool holds, stopping the event loop that transaction needs to go on.
 */
export const wakeDomainsAsync = (db: Db, domains: readonly string[], now: number) =>
  runPooled(db, queue.wakeDomains(db, domains, now));
/** The email's row (the delivery loop, right after its claim read the claimed emails ahead). */
export const emailBySeq = synced(emailsStore.emailBySeq);
export { tx, type DB } from '../store/db.js';
import { secret } from '../store/settings.js';
/** The service's secret `name` (VERP, tracking…), made on first use. */
export const secretOf = synced(secret);
export { onEvent } from '../store/events.js';
import { teamById as teamByIdPlan } from '../store/teams.js';
/** The team row, answered at once (the delivery loop's pool choice, once per team). */
export const teamById = synced(teamByIdPlan);

/**
 * The delivery loop's door for new mail: an email accepted with recipients due now is leased to this process's
 * loop in the very insert (no claim query later), and handed to it once the commit is durable. The loop says no
 * when it holds enough already, is stopping, or has older mail due in the store (that goes first, by claims).
 */
export interface Intake {
  /**
   * A lease end for `n` new recipients due now, or null (insert them unleased, for the claims). `domains`: theirs
   * (a domain whose queue is full or slow is not taken in).
   */
  reserve(n: number, domains: readonly string[]): number | null;
  /** Once the transaction ended: the committed email and its leased recipients, or null (rolled back). */
  hand(n: number, email: Email | null, rows: ClaimedRow[]): void;
  /** New recipients stored unleased (scheduled for later, or refused): the loop must look in the store. */
  notTaken(): void;
}
const intakes = new WeakMap<Db, Intake>();
export function setIntake(db: Db, intake: Intake | null): void {
  if (intake) intakes.set(db, intake);
  else intakes.delete(db);
}
export const intakeOf = (db: Db): Intake | undefined => intakes.get(db);
